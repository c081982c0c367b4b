"""bench: the PyTorch twins compute what the specs say, and the report adds up."""

from __future__ import annotations

import importlib.util
import os
import re

import numpy as np
import pytest

from ait_build.bench.competitors import prepare_onnxruntime
from ait_build.bench.run import CpuClock, stats, table
from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.mark.torch
@pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed")
@pytest.mark.parametrize("name", ["mlp", "tiny_cnn", "tiny_vit", "tiny_bert"])
def test_twin_matches_the_reference_executor(name):
    import torch
    from ait_build.bench.models import torch_twin
    graph = load_model(os.path.join(REPO, "specs", f"{name}.yaml"))
    twin = torch_twin(graph)
    inputs = random_inputs(graph, seed=1)
    want = run_reference(graph, inputs)
    with torch.no_grad():
        got = twin.module(*twin.to_args(inputs))
    assert len(got) == len(twin.outputs)
    for out_name, tensor in zip(twin.outputs, got):
        np.testing.assert_allclose(tensor.numpy(), want[out_name], rtol=1e-4, atol=1e-5)


def test_stats_and_clock():
    order = []
    times = CpuClock().measure({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                               warmup=2, runs=5)
    assert order == ["a", "b"] * 7  # the sides take turns
    assert [len(times["a"]), len(times["b"])] == [5, 5] and min(times["a"] + times["b"]) >= 0
    s = stats([0.004, 0.001, 0.002, 0.003, 0.010], batch=8)
    assert s["median_ms"] == pytest.approx(3.0) and s["min_ms"] == pytest.approx(1.0)
    assert s["items_per_s"] == pytest.approx(8 / 0.003)


def test_table_shows_ratios_and_skips():
    report = {"model": "mlp", "target": "cpu", "machine": {"cpus": 2}, "runs": 5, "warmup": 1,
              "clock": "time.perf_counter",
              "results": [{"dims": {"batch": 1}, "ait_build": {"median_ms": 0.5},
                           "torch": {"median_ms": 1.0, "ratio": 0.5, "max_abs_diff": 1e-7,
                                     "rel_l2": 3.4e-7},
                           "onnxruntime": {"skipped": "skipped: onnxruntime not installed"}}]}
    text = table(report, ["torch", "onnxruntime"])
    assert "| batch=1 | 0.500" in text and "| 0.50 " in text
    assert "| max|diff| | rel L2 |" in text and "| 1e-07 " in text and "| 3.4e-07 " in text
    assert "skipped: onnxruntime not installed" in text
    assert text.startswith("mlp on cpu (2 cpus")
    # the libraries the build linked (the cpu target's BLAS is what is installed) in the title
    text = table(dict(report, libraries={"mkl": "2026.2.1"}), ["torch", "onnxruntime"])
    assert text.startswith("mlp on cpu with mkl 2026.2.1 (2 cpus")


def test_missing_package_is_reported_as_skipped(monkeypatch):
    real = importlib.util.find_spec
    # only onnxruntime is missing, whatever else this machine has installed
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxruntime" else (real(name, *a) or name))
    assert prepare_onnxruntime(None, {}) == {"skipped": "skipped: onnxruntime not installed"}


def test_dtype_variant_keeps_includes_and_weights(tmp_path):
    from ait_build.bench.run import dtype_variant
    original = load_model(os.path.join(REPO, "specs", "tiny_cnn.yaml"))
    path = dtype_variant(os.path.join(REPO, "specs", "tiny_cnn.yaml"), "float16", str(tmp_path))
    assert path == str(tmp_path / "build" / "specs" / "tiny_cnn_float16.yaml")
    variant = load_model(path)  # its blocks/resnet.yaml include resolves from the new folder
    assert (variant.name, variant.dtype) == ("tiny_cnn_float16", "float16")
    assert variant.weight_names() == original.weight_names()
    assert [n.op for n in variant.nodes] == [n.op for n in original.nodes]
    assert dtype_variant(os.path.join(REPO, "specs", "tiny_cnn.yaml"), "float32", str(tmp_path)) \
        == os.path.join(REPO, "specs", "tiny_cnn.yaml")  # already float32: the spec itself


def test_dtype_variant_of_a_relative_spec_path(tmp_path, monkeypatch):
    """A spec named relative to the working directory: its include still resolves from
    build/specs/ (it was written relative, and looked for under build/specs/specs/)."""
    from ait_build.bench.run import dtype_variant
    monkeypatch.chdir(REPO)
    variant = load_model(dtype_variant(os.path.join("specs", "tiny_cnn.yaml"), "float16",
                                       str(tmp_path)))
    assert variant.name == "tiny_cnn_float16" and variant.nodes


def test_dtype_variant_of_an_onnx_sourced_spec_keeps_its_weights_file(tmp_path):
    """An ONNX import's spec whose weights are {random, file} (the zoo's form): the variant under
    build/specs/ reads the file beside the spec (it was left relative, and looked for there)."""
    import yaml
    from ait_build.bench.run import dtype_variant
    from ait_build.ir.weights import save_safetensors
    from ait_build.spec.source import graph_digest
    with open(os.path.join(REPO, "specs", "mlp.yaml"), encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    bias = np.arange(64, dtype=np.float32)
    save_safetensors({"fc1.bias": bias}, str(tmp_path / "consts.safetensors"))
    doc["weights"] = {"random": {"seed": 0}, "file": "consts.safetensors"}
    doc["source"] = {"importer": "onnx", "file": "mlp.onnx", "file_sha256": "0" * 64,
                     "graph_sha256": graph_digest(doc)}
    (tmp_path / "mlp.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    variant = load_model(dtype_variant(str(tmp_path / "mlp.yaml"), "float16", str(tmp_path)))
    assert variant.dtype == "float16"
    assert (variant.weights.get("fc1.bias") == bias).all()


@pytest.mark.parametrize("batches, dims, words", [
    ([1, 100], {}, "dim 'batch' is 100, outside the model's range [1, 64]"),
    ([1], {"seq": 3}, "unknown dim(s) seq"),
])
def test_dims_outside_the_spec_stop_bench_before_the_build(monkeypatch, batches, dims, words):
    """`bench mlp --batch 100` built the library (minutes for a large model), then stopped."""
    from ait_build.bench import run as bench_run
    from ait_build.errors import AitError
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(bench_run, "build", lambda *a, **k: pytest.fail("built"))
    with pytest.raises(AitError, match=re.escape(words)):
        bench_run.run_bench("mlp", "cpu", batches, [], None, None, dims)


class FakeSide:
    """A side handle for take_turns that logs what it was asked."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def warm(self, calls):
        self.log.append((self.name, "warm", calls))

    def turn(self, calls):
        self.log.append((self.name, "turn", calls))
        return [0.001 * calls] * calls


def test_sides_in_processes_take_turns():
    from ait_build.bench.sides import TURN_RUNS, take_turns
    log = []
    runs = 2 * TURN_RUNS + 1  # two full turns and a short one
    times = take_turns({"ours": FakeSide("ours", log), "theirs": FakeSide("theirs", log)},
                       warmup=2, runs=runs, settle=0)
    assert log == [("ours", "warm", 2), ("theirs", "warm", 2)] + [
        (name, "turn", calls) for calls in (TURN_RUNS, TURN_RUNS, 1) for name in ("ours", "theirs")]
    assert {name: len(t) for name, t in times.items()} == {"ours": runs, "theirs": runs}
    assert take_turns({}, warmup=1, runs=3, settle=0) == {}


def test_a_failing_side_process_reports_its_error(tmp_path):
    from ait_build.bench.competitors import Context
    from ait_build.bench.sides import time_sides_in_processes
    from ait_build.errors import AitError
    ctx = Context(os.path.join(REPO, "specs", "mlp.yaml"), "mlp", str(tmp_path / "no-build"))
    with pytest.raises(AitError) as caught:
        time_sides_in_processes(ctx, ["ait_build"], {"x": np.zeros((1, 4), np.float32)}, 1, 1)
    message = str(caught.value)
    assert message.startswith("bench side 'ait_build' failed:\n")
    assert "no-build" in message and "cannot read the manifest" in message
    assert "Traceback" not in message
