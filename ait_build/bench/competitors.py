"""The sides a bench times, on the same inputs: our library, PyTorch eager and ONNX Runtime on the
spec's PyTorch twin (models.py); and the Context they share. A side whose package is missing
says "skipped: ..."."""

from __future__ import annotations

import importlib.util
import os
import tempfile
import warnings

from ait_build.bench.models import torch_twin
from ait_build.runtime import Model
from ait_build.spec.model import load_model


def _missing(*packages) -> str:
    for package in packages:
        if importlib.util.find_spec(package) is None:
            return f"skipped: {package} not installed"
    return ""


def prepare_torch(ctx, inputs) -> dict:
    """PyTorch eager on the twin: {'call', 'outputs', ...} or {'skipped': why}."""
    skip = _missing("torch")
    if skip:
        return {"skipped": skip}
    import torch
    twin = ctx.twin()
    args = twin.to_args(inputs)

    def call():
        with torch.inference_mode():
            return twin.module(*args)

    outputs = {n: t.float().numpy() for n, t in zip(twin.outputs, call())}
    return {"call": call, "outputs": outputs, "threads": torch.get_num_threads(),
            "version": torch.__version__}


def prepare_onnxruntime(ctx, inputs) -> dict:
    """ONNX Runtime on the twin exported with torch.onnx.export (static shapes)."""
    skip = _missing("torch", "onnxruntime", "onnx")
    if skip:
        return {"skipped": skip}
    import onnxruntime as ort
    import torch
    twin = ctx.twin()
    args = twin.to_args(inputs)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        try:
            with warnings.catch_warnings():  # tracer warnings about the twins' Python control flow
                warnings.simplefilter("ignore")
                torch.onnx.export(twin.module, args, path, input_names=list(twin.input_names),
                                  output_names=list(twin.outputs), dynamo=False)
        except Exception as exc:  # the exporter's failures are many and version-specific
            return {"skipped": f"skipped: torch.onnx.export failed ({type(exc).__name__}: {exc})"}
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
    call = lambda: session.run(None, feed)
    return {"call": call, "outputs": dict(zip(twin.outputs, call())), "version": ort.__version__}


def prepare_ours(ctx, inputs) -> dict:
    model = ctx.model()
    call = lambda: model.run(inputs)
    return {"call": call, "outputs": call()}


COMPETITORS = {"torch": prepare_torch, "onnxruntime": prepare_onnxruntime}
SIDES = dict(ait_build=prepare_ours, **COMPETITORS)


class Context:
    """What the sides share for one spec: its graph, the built model and the PyTorch twin, each
    made on first use (a side process loads only what it needs)."""

    def __init__(self, spec: str, twin_name: str, build_dir: str, graph=None):
        self.spec, self.twin_name, self.build_dir = spec, twin_name, build_dir
        self._graph, self._model, self._twin = graph, None, None

    @property
    def graph(self):
        if self._graph is None:
            self._graph = load_model(self.spec)
        return self._graph

    def model(self):
        if self._model is None:
            self._model = Model(self.build_dir)
        return self._model

    def close(self) -> None:
        if self._model is not None:
            self._model.close()

    def twin(self):
        if self._twin is None:
            self._twin = torch_twin(self.graph, self.twin_name)
        return self._twin
