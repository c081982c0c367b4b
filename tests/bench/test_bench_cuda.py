"""bench on cuda targets without a GPU: the report's table and JSON, the run loop behind the CLI
(a fake torch and a fake build), and the one-line errors before any build."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from ait_build.bench import cuda as bench_cuda, run as bench_run
from ait_build.cli.main import main
from ait_build.codegen.digest import json_sha256

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def side(median, ratio=None):
    entry = {"median_ms": median, "p10_ms": median * 0.9, "p90_ms": median * 1.2}
    return entry if ratio is None else dict(entry, ratio=ratio)


REPORT = {
    "model": "bert_base", "target": "h200", "device": "NVIDIA H200", "dtype": "float16",
    "torch": "2.11.0+cu130", "compile_mode": "max-autotune", "warmup": 20, "runs": 100,
    "backend": "cuda", "clock": "torch.cuda.Event",
    "results": [
        {"model": "bert_base", "dims": {"batch": 1, "seq": 128}, "runs": 100, "warmup": 20,
         "ait_build": dict(side(0.9), items_per_s=1111.1), "ait_build_no_graphs": side(1.04),
         "torch_eager": side(6.3, 0.9 / 6.3), "torch_eager_cuda_graph": side(0.6, 1.5),
         "torch_compile": side(0.45, 2.0), "max_abs_diff": 0.0156, "speedup_vs_eager": 7.0},
        {"model": "bert_base", "dims": {"batch": 128, "seq": 128}, "runs": 30, "warmup": 5,
         "ait_build": dict(side(7.42), items_per_s=17250.7), "ait_build_no_graphs": side(7.54),
         "torch_eager": side(11.6, 0.64), "torch_eager_cuda_graph": {"skipped": "RuntimeError: x"},
         "torch_compile": {"skipped": "torch.compile failed (BackendCompilerFailed: no)"},
         "max_abs_diff": 0.0117, "speedup_vs_eager": 1.56}]}


def cells(line: str) -> list:
    return [c.strip() for c in line[2:-2].split(" | ")]


def test_table_puts_ours_beside_each_torch_mode_with_ratios_and_skips():
    lines = bench_cuda.table(REPORT).splitlines()
    title, head, rows, notes = lines[0], lines[1], lines[3:5], lines[5:]
    assert "bert_base on h200 (NVIDIA H200, float16, torch 2.11.0+cu130" in title
    assert "torch.compile mode max-autotune" in title
    assert cells(head) == [
        "dims", "runs", "ait-build ms", "items/s", "no graphs ms", "eager ms", "ours/eager",
        "eager+graph ms", "ours/eager+graph", "compile ms", "ours/compile", "max|diff|"]
    first = cells(rows[0])
    assert first == ["batch=1,seq=128", "100", "0.900", "1111", "1.040", "6.300", "0.14", "0.600",
                     "1.50", "0.450", "2.00", "0.016"]
    second = cells(rows[1])
    assert second[:7] == ["batch=128,seq=128", "30", "7.420", "17251", "7.540", "11.600", "0.64"]
    assert second[7:11] == ["skipped", "", "skipped", ""]
    assert notes == ["batch=128,seq=128: eager+graph skipped: RuntimeError: x",
                     "batch=128,seq=128: compile skipped: torch.compile failed "
                     "(BackendCompilerFailed: no)"]


def test_table_without_torch_shows_our_two_sides_only():
    report = dict(REPORT, compile_mode=None, results=[
        {k: v for k, v in REPORT["results"][0].items()
         if k in ("dims", "runs", "ait_build", "ait_build_no_graphs")}])
    head = bench_cuda.table(report).splitlines()[1]
    assert cells(head) == [
        "dims", "runs", "ait-build ms", "items/s", "no graphs ms"]
    assert "torch.compile" not in bench_cuda.table(report).splitlines()[0]


def test_ratios_are_ours_over_theirs():
    row = {"ait_build": side(2.0), "torch_eager": side(8.0), "torch_eager_cuda_graph": side(1.0),
           "torch_compile": {"skipped": "--compile-mode none"}}
    bench_cuda.add_ratios(row)
    assert row["torch_eager"]["ratio"] == 0.25 and row["torch_eager_cuda_graph"]["ratio"] == 2.0
    assert row["speedup_vs_eager"] == 4.0 and "ratio" not in row["torch_compile"]
    assert "ratio" not in row["ait_build"]
    # no dims: one item a call; 2 ms a call is 500 a second
    assert row["ait_build"]["items_per_s"] == 500.0 and row["torch_eager"]["items_per_s"] == 125.0
    assert "items_per_s" not in row["torch_compile"]


def test_throughput_counts_the_batch():
    row = {"dims": {"batch": 256, "seq": 128}, "ait_build": side(4.0),
           "ait_build_no_graphs": side(5.0)}
    bench_cuda.add_ratios(row)
    assert row["ait_build"]["items_per_s"] == 64000.0
    assert row["ait_build_no_graphs"]["items_per_s"] == 51200.0


def test_summary_and_large_cases_run_fewer_times():
    s = bench_cuda.summary([float(t) for t in range(1, 12)])  # 1..11 ms
    assert s["median_ms"] == 6.0 and s["p10_ms"] == pytest.approx(1.2)
    assert s["p90_ms"] == pytest.approx(10.8)
    assert bench_cuda.summary([2.5]) == {"median_ms": 2.5, "p10_ms": 2.5, "p90_ms": 2.5}
    assert bench_cuda.case_runs({"batch": 1, "seq": 128}, 100, 20) == (100, 20)
    assert bench_cuda.case_runs({"batch": 256}, 100, 20) == (100, 20)
    assert bench_cuda.case_runs({"batch": 128, "seq": 128}, 100, 20) == (30, 5)
    assert bench_cuda.case_runs({"batch": 8, "seq": 4096}, 10, 2) == (10, 2)


def test_parse_case():
    assert bench_cuda.parse_case("resnet50:256") == ("resnet50", {"batch": 256})
    assert bench_cuda.parse_case("bert_base:8x4096") == ("bert_base", {"batch": 8, "seq": 4096})
    assert bench_cuda.parse_case("vit_b16") == ("vit_b16", {"batch": 1})


# -- through the CLI ------------------------------------------------------------------------------
def no_build(*args, **kwargs):
    raise AssertionError("bench built although it could not time the result")


def fake_torch(available: bool):
    cuda = types.SimpleNamespace(is_available=lambda: available,
                                 get_device_name=lambda: "Fake GPU", empty_cache=lambda: None)
    return types.SimpleNamespace(__version__="9.9.9", cuda=cuda, float32="torch.float32")


def run_cli(argv, capsys):
    rc = main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_vs_onnxruntime_on_a_cuda_target_is_an_error(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(bench_run, "build", no_build)
    rc, out, err = run_cli(["bench", "mlp", "--target", "h200", "--vs", "torch,onnxruntime"],
                           capsys)
    assert rc == 1 and out == ""
    assert err == ("error: --vs onnxruntime compares on cpu only; on a cuda target --vs takes "
                   "torch (eager, eager + CUDA graph, torch.compile)\n")


@pytest.mark.parametrize("torch_module, message", [
    (None, "error: bench on a cuda target needs PyTorch with CUDA (it times with "
           "torch.cuda.Event): pip install -e \".[torch]\"\n"),
    (fake_torch(False), "error: bench on a cuda target needs a CUDA device; PyTorch 9.9.9 sees "
                        "none\n")])
def test_without_torch_or_a_gpu_one_line_and_no_build(monkeypatch, capsys, torch_module, message):
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(bench_run, "build", no_build)
    monkeypatch.setitem(sys.modules, "torch", torch_module)  # None: `import torch` fails
    rc, out, err = run_cli(["bench", "mlp", "--target", "a100", "--vs", "torch"], capsys)
    assert (rc, out, err) == (1, "", message)


@pytest.fixture
def fake_cuda_build(monkeypatch, tmp_path):
    """`build` makes a cuda build's manifest (of specs/mlp.yaml) and nothing else; a fake torch
    sees a GPU. Returns the build folder."""
    monkeypatch.chdir(REPO)
    build_dir = tmp_path / "build" / "h200" / "mlp"

    def fake_build(spec, target, jobs=None):
        assert (os.path.basename(spec), target) == ("mlp.yaml", "h200")
        build_dir.mkdir(parents=True)
        manifest = {
            "name": "mlp", "c_name": "ait_mlp", "target": "h200", "backend": "cuda", "device": "cuda",
            "dtype": "float32", "dims": [{"name": "batch", "min": 1, "max": 64, "opt": 8}],
            "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", 32]}],
            "outputs": [{"name": "softmax", "dtype": "float32", "shape": ["batch", 16]}],
            "weights": {"file": "weights.safetensors", "bytes": 0, "sha256": ""}}
        manifest["build_id"] = json_sha256(manifest)
        (build_dir / "manifest.json").write_text(json.dumps(manifest))
        return str(build_dir)

    monkeypatch.setattr(bench_run, "build", fake_build)
    monkeypatch.setattr(bench_cuda, "cuda_torch", lambda: fake_torch(True))
    return build_dir


def test_a_cuda_build_goes_to_the_cuda_bench_and_saves_every_case(monkeypatch, capsys, tmp_path,
                                                                  fake_cuda_build):
    """The CLI on a (fake) cuda build: bench_cuda's loop with the cuda defaults, JSON rewritten
    after each case, the cuda table printed. Timing itself needs the GPU (bench_case faked)."""
    build_dir = fake_cuda_build
    report_path = tmp_path / "out" / "bench.json"
    calls = []

    def fake_case(torch, build, twin, module, dtype, inputs, warmup, runs, compile_mode,
                  reference=None):
        assert (build, module, dtype, compile_mode) == (str(build_dir), "module on cuda",
                                                        "torch.float32", "reduce-overhead")
        assert reference is None  # a float32 model is its own float32 reference
        if calls:  # the first case is on disk before the second is timed
            saved = json.loads(report_path.read_text())
            assert [r["dims"] for r in saved["results"]] == [{"batch": 1}]
        calls.append((inputs["x"].shape, warmup, runs))
        ms = float(inputs["x"].shape[0])
        return {"ait_build": side(ms), "ait_build_no_graphs": side(ms + 1),
                "torch_eager": side(4 * ms), "torch_eager_cuda_graph": side(2 * ms),
                "torch_compile": {"skipped": "torch.compile failed (X: y)"}, "max_abs_diff": 0.001}

    twin = types.SimpleNamespace(module=types.SimpleNamespace(to=lambda *a: "module on cuda"),
                                 note="")
    monkeypatch.setattr(bench_cuda, "bench_case", fake_case)
    monkeypatch.setattr("ait_build.bench.competitors.Context.twin", lambda self: twin)
    rc, out, err = run_cli(["bench", "mlp", "--target", "h200", "--batch", "1,4", "--vs", "torch",
                            "--compile-mode", "reduce-overhead", "--json", str(report_path)],
                           capsys)
    assert rc == 0
    assert calls == [((1, 32), 20, 100), ((4, 32), 20, 100)]  # the cuda defaults
    report = json.loads(report_path.read_text())
    assert (report["backend"], report["device"], report["torch"], report["clock"]) == \
        ("cuda", "Fake GPU", "9.9.9", "torch.cuda.Event")
    assert report["compile_mode"] == "reduce-overhead" and report["vs"] == ["torch"]
    last = report["results"][1]
    assert (last["dims"], last["runs"], last["warmup"]) == ({"batch": 4}, 100, 20)
    assert last["torch_eager"]["ratio"] == 0.25 and last["speedup_vs_eager"] == 4.0
    assert last["torch_eager_cuda_graph"]["ratio"] == 0.5
    assert last["torch_compile"] == {"skipped": "torch.compile failed (X: y)"}
    assert out.splitlines()[0].startswith("mlp on h200 (Fake GPU, float32, torch 9.9.9")
    assert "| batch=4 | 100  | 4.000" in out and "batch=4: compile skipped: torch.compile failed" in out
    assert err.splitlines()[0].startswith("batch=1: ait-build 1.000 ms (no graphs 2.000)")


def test_without_a_comparison_ours_is_timed_and_the_table_says_why(monkeypatch, capsys,
                                                                    fake_cuda_build):
    from ait_build.bench.source_twin import NoComparison
    why = "no comparison: spec 'mlp' was edited after import (...)"

    def no_twin(self):
        raise NoComparison(why)

    def fake_case(torch, build, twin, module, dtype, inputs, warmup, runs, compile_mode,
                  reference=None):
        assert (twin, module, reference) == (None, None, None)
        return {"ait_build": side(1.0), "ait_build_no_graphs": side(2.0)}

    monkeypatch.setattr(bench_cuda, "bench_case", fake_case)
    monkeypatch.setattr("ait_build.bench.competitors.Context.twin", no_twin)
    rc, out, err = run_cli(["bench", "mlp", "--target", "h200", "--vs", "torch"], capsys)
    assert rc == 0 and out.splitlines()[-1] == why and why in err
    assert cells(out.splitlines()[1]) == ["dims", "runs", "ait-build ms", "items/s", "no graphs ms"]


def test_errors_against_float32_in_the_table_and_auto_compile_mode():
    report = dict(REPORT, results=[dict(REPORT["results"][0], rel_l2_vs_float32={
        "ait_build": 6.3e-4, "torch_eager": 7.1e-4})], note="the weights file is not ...")
    lines = bench_cuda.table(report).splitlines()
    assert cells(lines[1])[-1] == "rel L2 ours (eager)"
    assert cells(lines[3])[-1] == "6.3e-04 (7.1e-04)"
    assert lines[-1] == "the weights file is not ..."
    assert bench_cuda.case_compile_mode("auto", {"batch": 1, "seq": 128}) == "reduce-overhead"
    assert bench_cuda.case_compile_mode("auto", {"batch": 64}) == "default"
    assert bench_cuda.case_compile_mode("max-autotune", {"batch": 1}) == "max-autotune"


def test_relative_l2_over_all_outputs():
    torch = pytest.importorskip("torch")
    want = {"a": torch.tensor([3.0, 0.0]), "b": torch.tensor([[4.0]])}
    ours = {"a": torch.tensor([3.0, 0.5], dtype=torch.float16), "b": torch.tensor([[4.0]])}
    assert bench_cuda.rel_l2(ours, want) == pytest.approx(0.1)  # 0.5 / 5
