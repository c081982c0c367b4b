"""`ait-build import onnx`: the models of test_import_torch exported by PyTorch's ONNX exporters
(torch.export-based by default, the TorchScript one for those its size arithmetic we follow),
imported with initializers as weights, built for cpu and matched against PyTorch at batch 1
within 1e-5 relative."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

from cases import CASES, CLASSES, RESNET18, rel_error, torch_outputs  # noqa: E402

from ait_build.importers.from_onnx import import_onnx  # noqa: E402
from ait_build.importers.options import parse_dim, parse_input  # noqa: E402
from ait_build.importers.simplify import simplify  # noqa: E402
from ait_build.importers.write import write_spec  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402
from ait_build.pipeline import build_plan, find_target  # noqa: E402

pytestmark = pytest.mark.torch
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTOL = 1e-5
ALL = dict(CASES, resnet18=RESNET18, **CLASSES)
# transformers' attention through scaled_dot_product_attention, which the exporter writes with
# q and k each scaled by sqrt(scale) and a NaN guard after the softmax: one attention a layer
SDPA = ("distilbert", "hf_gpt2")
# the TorchScript exporter's size arithmetic around nn.MultiheadAttention (Mod) is not followed
LEGACY = ["residual_cnn", "depthwise_se", "bert_encoder", "gpt2", "resnet18"]


def export(name: str, path: str, dynamo: bool) -> None:
    factory, input_texts, dim_texts, feed = ALL[name]
    module, _, attr = factory.partition(":")
    model = getattr(importlib.import_module(module), attr)()
    specs = [parse_input(t) for t in input_texts]
    # batch 2 as the example: exporters specialize sizes of 1
    example = tuple(torch.from_numpy(np.concatenate([v, v])) for v in feed.values())
    names = [s.name for s in specs]
    with contextlib.redirect_stdout(io.StringIO()):
        if dynamo:
            pytest.importorskip("onnxscript")
            dims = {d.name: torch.export.Dim(d.name, min=d.min, max=d.max)
                    for d in (parse_dim(t) for t in dim_texts)}
            dynamic = tuple({i: dims[s] for i, s in enumerate(spec.shape) if isinstance(s, str)}
                            for spec in specs)
            torch.onnx.export(model, example, path, dynamo=True, dynamic_shapes=dynamic,
                              input_names=names)
        else:
            axes = {s.name: {i: d for i, d in enumerate(s.shape) if isinstance(d, str)}
                    for s in specs}
            torch.onnx.export(model, example, path, dynamo=False, input_names=names,
                              dynamic_axes=axes)


def import_file(name: str, path: str, out_dir) -> tuple:
    graph = import_onnx(path, [], [parse_dim(t) for t in ALL[name][2]], name)
    simplify(graph)
    return write_spec(graph, os.path.join(str(out_dir), f"{name}.yaml"), "test import")


# built for cpu in the default run; the others' libraries are the same backend code as their
# PyTorch imports' (test_import_torch.py builds those), so their ONNX translation is checked in
# the reference by default and built under `pytest -m slow`
BUILT_BY_DEFAULT = ("resnet18", "distilbert")


def _onnx_cases(built: bool):
    if not built:
        return [name for name in sorted(ALL) if name not in BUILT_BY_DEFAULT]
    return [name if name in BUILT_BY_DEFAULT else pytest.param(name, marks=pytest.mark.slow)
            for name in sorted(ALL)]


@pytest.mark.parametrize("name", _onnx_cases(built=False))
def test_onnx_import_matches_torch(name, tmp_path):
    _check_onnx_import(name, tmp_path, None)


@pytest.mark.parametrize("name", _onnx_cases(built=True))
def test_onnx_import_matches_torch_on_cpu(name, tmp_path, build_spec):
    _check_onnx_import(name, tmp_path, build_spec)


def _check_onnx_import(name, tmp_path, build_spec):
    path = str(tmp_path / f"{name}.onnx")
    export(name, path, dynamo=True)
    spec, _, graph = import_file(name, path, tmp_path)
    feed = ALL[name][3]
    want = torch_outputs(ALL[name][0], feed)
    ref = run_reference(graph, feed)
    for out, expected in zip(graph.outputs, want):
        assert rel_error(ref[out], expected) < RTOL
    if build_spec is not None:
        model, _, _ = build_spec(spec, name=f"onnx_{name}")
        got = model.run(feed)
        for out, expected in zip(graph.outputs, want):
            assert rel_error(got[out], expected) < RTOL
    if name in SDPA:
        plan = build_plan(spec, find_target("cpu"))
        kernels = [step.kernel.label for step in plan.steps]
        attention = [k for k in kernels if k.startswith("attention")]  # GPT-2's: attention_causal
        assert len(attention) == 2 and "softmax" not in kernels, kernels
        scales = [n.attrs["scale"] for n in plan.graph.nodes if n.op == "multi_head_attention"]
        assert scales == [pytest.approx(8 ** -0.5)] * 2, scales  # sqrt(scale) squared


@pytest.mark.parametrize("name", LEGACY)
def test_torchscript_exporter_files_import(name, tmp_path):
    """The older exporter spells sizes as Shape/Gather/Concat chains: they become dims."""
    path = str(tmp_path / f"{name}.onnx")
    export(name, path, dynamo=False)
    spec, _, graph = import_file(name, path, tmp_path)
    feed = ALL[name][3]
    want = torch_outputs(ALL[name][0], feed)
    ref = run_reference(graph, feed)
    for out, expected in zip(graph.outputs, want):
        assert rel_error(ref[out], expected) < RTOL
    assert "Shape" not in open(spec).read()


def test_onnx_command_and_report(tmp_path):
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    w = helper.make_tensor("fc.weight", TensorProto.FLOAT, [4, 4], list(np.eye(4).ravel()))
    good = helper.make_graph([helper.make_node("Gemm", ["x", "fc.weight"], ["h"], transB=1),
                              helper.make_node("Relu", ["h"], ["y"])], "g", [x], [y], [w])
    path = tmp_path / "good.onnx"
    onnx.save(helper.make_model(good), str(path))
    out = tmp_path / "specs" / "good.yaml"
    cli = [sys.executable, "-m", "ait_build", "import", "onnx"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(cli + [str(path), "--dim", "batch=1:16", "-o", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "batch: {min: 1, max: 16, opt: 8}" in text and "op: linear" in text
    # two operators without a translation, one after the other: both are listed, nothing written
    bad = helper.make_graph([helper.make_node("Det", ["x"], ["d"]),
                             helper.make_node("Hardmax", ["d"], ["y"])], "g", [x], [y])
    bad_path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(bad), str(bad_path))
    out_bad = tmp_path / "bad" / "bad.yaml"
    proc = subprocess.run(cli + [str(bad_path), "-o", str(out_bad)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1
    assert "2 operation(s) cannot be imported" in proc.stderr, proc.stderr
    assert "node 0" in proc.stderr and "Det" in proc.stderr and "Hardmax" in proc.stderr
    assert not out_bad.parent.exists() or os.listdir(out_bad.parent) == []
