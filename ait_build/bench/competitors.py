"""The sides a bench times, on the same inputs: our library, PyTorch eager and ONNX Runtime on the
model an imported spec's `source:` names or on a zoo spec's PyTorch twin (source_twin.py,
models.py); and the Context they share. A side whose package is missing, or that has nothing to
compare with, says "skipped: ..."."""

from __future__ import annotations

import importlib.util
import os
import tempfile
import warnings

from ait_build.bench.source_twin import (NoComparison, comparison_twin, onnx_feed, onnx_model,
                                         source_layouts)
from ait_build.runtime import Model
from ait_build.spec.model import load_model


def _missing(*packages) -> str:
    for package in packages:
        if importlib.util.find_spec(package) is None:
            return f"skipped: {package} not installed"
    return ""


def prepare_torch(ctx, inputs) -> dict:
    """PyTorch eager on the spec's source module or twin: {'call', 'outputs', ...} or
    {'skipped': why}."""
    skip = _missing("torch")
    if skip:
        return {"skipped": skip}
    import torch
    try:
        twin = ctx.twin()
        args = twin.to_args(inputs)

        def call():
            with torch.inference_mode():
                return twin.module(*args)

        outputs = {n: t.float().numpy() for n, t in zip(twin.outputs, call())}
    except NoComparison as exc:
        return {"skipped": str(exc)}
    return _noted({"call": call, "outputs": outputs, "threads": torch.get_num_threads(),
                   "version": torch.__version__}, twin.note)


def prepare_onnxruntime(ctx, inputs) -> dict:
    """ONNX Runtime on the spec's ONNX source file, or on its PyTorch source module or twin
    exported with torch.onnx.export (static shapes)."""
    skip = _missing("onnxruntime", "onnx")
    if skip:
        return {"skipped": skip}
    import onnxruntime as ort
    try:
        from_file = onnx_model(ctx.spec, ctx.graph, ctx.twin_name)
        if from_file is not None:
            model, note = from_file
            try:
                session = ort.InferenceSession(model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
            except Exception as exc:  # ONNX Runtime's own checks (its Fail, InvalidGraph...)
                line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise NoComparison(f"no comparison: ONNX Runtime refuses the source file with "
                                   f"the spec's weights: {line[:300]}") from None
            feed = onnx_feed(session, inputs, ctx.graph, source_layouts(ctx.spec))
            names = list(ctx.graph.outputs)
        else:
            skip = _missing("torch")
            if skip:
                return {"skipped": skip}
            session, feed, names, note = _exported_session(ctx, inputs)
    except NoComparison as exc:
        return {"skipped": str(exc)}
    if isinstance(session, dict):  # the export failed
        return session
    call = lambda: session.run(None, feed)
    return _noted({"call": call, "outputs": dict(zip(names, call())), "version": ort.__version__},
                  note)


def _exported_session(ctx, inputs) -> tuple:
    """(session, feed, output names, note) of the twin exported with torch.onnx.export, or
    ({'skipped': why}, ...) when the export fails."""
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
            why = f"skipped: torch.onnx.export failed ({type(exc).__name__}: {exc})"
            return {"skipped": why}, None, None, ""
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
    return session, feed, list(twin.outputs), twin.note


def _noted(side: dict, note: str) -> dict:
    if note:
        side["note"] = note
    return side


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
        """The PyTorch module to compare with (source_twin.py); NoComparison says why not."""
        if self._twin is None:
            self._twin = comparison_twin(self.spec, self.graph, self.twin_name)
        return self._twin
