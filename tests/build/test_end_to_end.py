"""Real builds of the small specs, run from Python, from the CLI and from C++, against the NumPy
reference executor."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from buildproj import REPO, make_project

MODELS = ("mlp", "tiny_cnn", "tiny_bert", "tiny_vit")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = make_project(str(tmp_path_factory.mktemp("e2e") / "proj"), shared_cache=True)
    project.scons("target=cpu", "model=" + ",".join(MODELS))
    return project


def _graph(name):
    from ait_build.spec.model import load_model
    return load_model(os.path.join(REPO, "specs", f"{name}.yaml"))


@pytest.mark.parametrize("name", MODELS)
def test_model_matches_the_reference(project, name):
    """Batches 1 and 3, and the smallest, largest and opt dims (the memory plan's max-size
    workspace and dynamic sizes both show); the optimizer's plan and fused ops are what ran."""
    from ait_build.ops.reference import random_inputs, run_reference
    from ait_build.runtime import Model
    from backends.cpu.helpers import tolerance
    graph = _graph(name)
    with open(project.path("build", "cpu", name, "manifest.json")) as fh:
        manifest = json.load(fh)
    assert manifest["memory_plan"] == "optimizer"
    if name == "tiny_bert":
        assert {"fused_elementwise", "multi_head_attention"} <= {k["op"] for k in manifest["kernels"]}
    with Model(project.path("build", "cpu", name)) as model:
        for batch in (1, 3):
            inputs = random_inputs(graph, {"batch": batch}, seed=batch)
            got = model.run(inputs)
            want = run_reference(graph, inputs)
            assert list(got) == list(want)
            for out in want:
                np.testing.assert_allclose(got[out], want[out], rtol=1e-4, atol=1e-5,
                                           err_msg=f"{name}.{out} at batch {batch}")
        for which, seed in (("min", 1), ("max", 2), ("opt", 3)):
            dims = graph.bounds_env(which)
            inputs = random_inputs(graph, dims, seed=seed)
            got, want = model.run(inputs, dims), run_reference(graph, inputs)
            for out, expected in want.items():
                np.testing.assert_allclose(got[out], expected, **tolerance(expected),
                                           err_msg=f"{name}.{out} at the {which} dims")


def test_eight_threads_give_the_serial_results(project):
    """The generated run() and the Python runtime under concurrent calls on one Model."""
    from ait_build.ops.reference import random_inputs
    from ait_build.runtime import Model
    graph = _graph("tiny_bert")
    with Model(project.path("build", "cpu", "tiny_bert")) as model:
        cases = [random_inputs(graph, {"batch": 1 + i % 3, "seq": 4 + i % 9}, seed=i) for i in range(16)]
        serial = [model.run(c) for c in cases]
        results, errors = [None] * len(cases), []

        def worker(k):
            try:
                for _ in range(3):
                    for i in range(k, len(cases), 8):
                        results[i] = model.run(cases[i])
            except Exception as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    for want, got in zip(serial, results):
        for out in want:
            np.testing.assert_array_equal(got[out], want[out])


def test_cli_run_check(project, capsys):
    from ait_build.cli.main import main
    assert main(["run", project.path("build", "cpu", "tiny_cnn"), "--random-input", "--batch", "2",
                 "--check"]) == 0
    out = capsys.readouterr().out
    assert "fc: float32[2, 10]" in out and "check fc:" in out and out.rstrip().endswith("ok")


@pytest.mark.skipif(not shutil.which("g++"), reason="g++ is not installed")
def test_cpp_example_prints_what_python_computes(project, tmp_path):
    from ait_build.runtime import Model
    build_dir = project.path("build", "cpu", "mlp")
    exe = str(tmp_path / "mlp_example")
    subprocess.run(["g++", "-std=c++17", "-O2", os.path.join(REPO, "examples", "cpp", "main.cpp"),
                    f"-I{build_dir}", f"-L{build_dir}", "-lmlp", f"-Wl,-rpath,{build_dir}", "-o", exe],
                   check=True)
    proc = subprocess.run([exe, build_dir], capture_output=True, text=True, timeout=120, check=True)
    lines = proc.stdout.split("\n")
    assert lines[0] == "softmax 3 16"
    printed = np.array([[float(v) for v in line.split()] for line in lines[1:4]], dtype=np.float32)
    x = ((np.arange(3 * 32) % 7 - 3) * 0.25).astype(np.float32).reshape(3, 32)
    with Model(build_dir) as model:
        np.testing.assert_allclose(printed, model.run({"x": x})["softmax"], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mode", [[], ["--in-process"]])
def test_cli_build_then_bench(project, tmp_path, monkeypatch, capsys, mode):
    import importlib.util
    from ait_build.cli.main import main
    monkeypatch.chdir(project.root)  # the CLI builds in the project around the working directory
    assert main(["build", "specs/mlp.yaml", "--target", "cpu", "-j", "2"]) == 0
    assert "built build/cpu/mlp/libmlp.so" in capsys.readouterr().out
    report = str(tmp_path / "bench.json")
    assert main(["bench", "mlp", "--batch", "1,2", "--runs", "3", "--warmup", "1",
                 "--vs", "torch,onnxruntime", "--json", report, *mode]) == 0
    table = capsys.readouterr().out
    assert "| batch=2 |" in table
    with open(report) as fh:
        data = json.load(fh)
    assert [r["dims"] for r in data["results"]] == [{"batch": 1}, {"batch": 2}]
    for row in data["results"]:
        assert row["ait_build"]["runs"] == 3 and row["ait_build"]["median_ms"] > 0
        # the ONNX Runtime side exports the PyTorch twin, so it needs torch and onnx as well
        for name, packages in (("torch", ("torch",)), ("onnxruntime", ("torch", "onnxruntime", "onnx"))):
            missing = [p for p in packages if importlib.util.find_spec(p) is None]
            if missing:
                assert row[name]["skipped"] == f"skipped: {missing[0]} not installed"
            else:
                assert row[name]["max_abs_diff"] < 1e-5
                assert row[name]["ratio"] == pytest.approx(
                    row["ait_build"]["median_ms"] / row[name]["median_ms"])


def test_bench_prebuilt_times_the_library_as_it_is(project, tmp_path, monkeypatch, capsys):
    """`bench --prebuilt`: the library already in build/TARGET/NAME, no SCons (a machine without
    the toolchain); a spec never built there is a one-line error saying how to build it."""
    from ait_build.bench import run as bench_run
    from ait_build.cli.main import main

    def no_build(*args, **kwargs):
        raise AssertionError("--prebuilt ran SCons")

    monkeypatch.setattr(bench_run, "build", no_build)
    monkeypatch.chdir(project.root)
    report = str(tmp_path / "prebuilt.json")
    assert main(["bench", "mlp", "--prebuilt", "--runs", "2", "--warmup", "1", "--json",
                 report]) == 0
    with open(report) as fh:
        data = json.load(fh)
    assert data["build_dir"].endswith(os.path.join("build", "cpu", "mlp"))
    assert data["results"][0]["ait_build"]["median_ms"] > 0
    capsys.readouterr()
    spec = os.path.join(project.root, "specs", "never_built.yaml")
    with open(os.path.join(project.root, "specs", "mlp.yaml")) as fh:
        text = fh.read()
    with open(spec, "w") as fh:
        fh.write(text.replace("name: mlp", "name: never_built"))
    assert main(["bench", spec, "--prebuilt"]) == 1
    err = capsys.readouterr().err
    assert "--prebuilt: build/cpu/never_built has no manifest.json or weights.safetensors" in err
    assert "ait-build build specs/never_built.yaml --target cpu" in err


def test_bench_steps_times_every_node(project, tmp_path, monkeypatch, capsys):
    """`bench --steps`: the per-node table of each case, from the library's time_steps(), with
    the linear layers' FLOPs (2 * rows * in * out) and every node's bytes."""
    from ait_build.cli.main import main
    monkeypatch.chdir(project.root)
    report = str(tmp_path / "steps.json")
    assert main(["bench", "mlp", "--batch", "4", "--runs", "2", "--warmup", "1", "--steps",
                 "--json", report]) == 0
    out = capsys.readouterr().out
    assert "mlp batch=4: per node" in out and "slowest nodes" in out
    with open(report) as fh:
        (case,) = json.load(fh)["results"]
    from ait_build.pipeline import build_plan
    from ait_build.pipeline import find_target
    graph = build_plan(os.path.join(project.root, "specs", "mlp.yaml"), find_target("cpu")).graph
    assert [r["node"] for r in case["steps"]] == [n.name for n in graph.nodes]  # gelu fused
    for row in case["steps"]:
        assert row["ms"] > 0 and row["bytes"] > 0 and row["ceilings"] == [None, None]
        node = next(n for n in graph.nodes if n.name == row["node"])
        if node.op == "linear":
            k = graph.tensors[node.inputs[0]].shape[-1].value
            assert row["flops"] == 2 * 4 * k * node.attrs["out_features"]


CREATE = """
import ctypes, sys
from ait_build.runtime.model import CApi
api = CApi(sys.argv[1], "ait_mlp")
handle = ctypes.c_void_p()
rc = api.create(sys.argv[2].encode(), ctypes.byref(handle))
print(rc, api.error() if rc else "")
"""


@pytest.mark.parametrize("damage", ["truncate", "other_model"])
def test_generated_create_refuses_a_bad_weights_file(project, tmp_path, damage):
    """The library's own check, under the runtime's size check: ait_mlp_create() on a damaged
    file, in a subprocess where a crash shows as a signal."""
    weights = str(tmp_path / "weights.safetensors")
    if damage == "truncate":
        shutil.copy(project.path("build", "cpu", "mlp", "weights.safetensors"), weights)
        with open(weights, "r+b") as fh:
            fh.truncate(os.path.getsize(weights) // 2)
    else:
        shutil.copy(project.path("build", "cpu", "tiny_cnn", "weights.safetensors"), weights)
    proc = subprocess.run([sys.executable, "-c", CREATE, project.path("build", "cpu", "mlp", "libmlp.so"),
                           weights], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # a signal would be negative
    rc, _, message = proc.stdout.strip().partition(" ")
    assert rc != "0" and message
