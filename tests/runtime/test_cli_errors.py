"""A user's mistake on the command line is one line on stderr, exit status 1 (2 for a malformed
argument, argparse's usage errors), and never a traceback; outputs are checked before the work
that would fill them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ait_build.codegen.digest import json_sha256
from cli_in_process import run_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "specs", "mlp.yaml")


def _cli(*args, cwd=ROOT, timeout=120):
    """A process of its own: for a command that must not hang (a FIFO), warn or start SCons."""
    return subprocess.run([sys.executable, "-m", "ait_build", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=ROOT))


def _one_line(proc, rc: int, words: str) -> None:
    assert proc.returncode == rc, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert words in lines[0], lines[0]


@pytest.mark.parametrize("args, words", [
    (["run", "{toy}", "--random-input", "--batch", "-1"], "argument --batch: must be >= 1, got -1"),
    (["reference", MLP, "--random-input", "--batch", "0"], "argument --batch: must be >= 1, got 0"),
    (["run", "{toy}", "--random-input", "--seed", "-5"], "argument --seed: must be >= 0, got -5"),
    (["reference", MLP, "--random-input", "--seed", "x"], "expected an integer, got 'x'"),
    (["reference", MLP, "--random-input", "--dim", "batch"], "takes NAME=VALUE, got 'batch'"),
    (["reference", MLP, "--random-input", "--inputs", "x.safetensors"],
     "argument --inputs: not allowed with argument --random-input"),
    (["run", "{toy}", "--inputs", "x.safetensors", "--random-input"],
     "argument --random-input: not allowed with argument --inputs"),
    (["bench", "mlp", "--batch", "0"], "argument --batch: must be >= 1, got 0"),
    (["bench", "mlp", "--batch", "abc"], "argument --batch: expected an integer, got 'abc'"),
    (["bench", "mlp", "--runs", "0"], "argument --runs: must be >= 1, got 0"),
    (["bench", "mlp", "--warmup", "-1"], "argument --warmup: must be >= 0, got -1"),
    (["build", "mlp", "-j", "0"], "argument -j/--jobs: must be >= 1, got 0"),
    (["serve", "{toy}", "--instances", "99999999999"],
     "argument --instances: must be at most 256, got 99999999999"),
    (["profile", "mlp", "--target", "h200", "-j", "0"], "argument -j/--jobs: must be >= 1, got 0"),
])
def test_malformed_arguments_are_usage_errors(toy_dir, args, words):
    _one_line(run_main(*[a.format(toy=toy_dir) for a in args]), 2, words)


@pytest.mark.parametrize("args, words", [
    (["reference", MLP, "--random-input", "--dim", "nope=3"], "unknown dim(s) nope; the model's dims: batch"),
    (["reference", MLP, "--random-input", "--batch", "65"], "dim 'batch' is 65, outside the model's range [1, 64]"),
    (["reference", MLP, "--random-input", "--dim", "batch=2", "--batch", "3"], "dim 'batch' is given twice"),
    (["bench", MLP, "--dim", "batch=4", "--batch", "2"], "dim 'batch' is given twice"),
    (["run", "{toy}", "--random-input", "--dim", "nope=3"], "unknown dim(s) nope"),
    (["run", "{toy}", "--random-input", "--batch", "100000"], "outside the model's range [1, 64]"),
    (["run", "{toy}", "--random-input", "-o", "{tmp}"], "is a directory; give a file name"),
    (["run", "{toy}", "--random-input", "-o", "{tmp}/no/such/out.safetensors"], "does not exist"),
    (["reference", MLP, "--random-input", "-o", "{tmp}"], "is a directory"),
    (["run", "{toy}", "--random-input", "--check", "--spec", MLP], "does not describe the model built as 'toy'"),
    (["run", "{toy}", "--inputs", "{tmp}"], "not a regular file"),
    (["run", "{toy}", "--random-input", "-o", "{toy}/weights.safetensors"], "is the input"),
    (["graph", MLP, "-o", "/proc/ait-build/graph.txt"], "cannot write /proc/ait-build/graph.txt"),
])
def test_user_errors_are_one_line_before_the_work(toy_dir, tmp_path, args, words):
    _one_line(run_main(*[a.format(toy=toy_dir, tmp=tmp_path) for a in args]), 1, words)


@pytest.mark.parametrize("save, kind, how", [
    (lambda path, x: np.save(path, x), ".npy", "{'NAME': np.load(FILE)}"),
    (lambda path, x: np.savez(path, x=x), ".npz", "dict(np.load(FILE))"),
])
def test_a_numpy_file_as_inputs_or_weights_says_how_to_convert_it(tmp_path, save, kind, how):
    """NumPy's files were 'cannot read safetensors file: ... header too large'."""
    path = str(tmp_path / "in")
    save(path, np.ones((2, 32), np.float32))
    path = next(str(p) for p in tmp_path.iterdir())
    _one_line(run_main("reference", MLP, "--inputs", path), 1,
              f"{path}: a NumPy {kind} file, not safetensors; --inputs takes a safetensors file "
              f"whose tensors are named as the model's inputs: safetensors.numpy.save_file({how}, "
              "'in.safetensors')")
    _one_line(run_main("reference", MLP, "--random-input", "--weights", path), 1,
              f"{path}: a NumPy {kind} file, not safetensors; weights: takes a safetensors file "
              f"whose tensors are named as the model's weights: safetensors.numpy.save_file("
              f"{how}, 'weights.safetensors')")


def test_hand_edited_manifest_is_one_line(toy_dir, tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    for name in os.listdir(toy_dir):
        (folder / name).write_bytes((open(os.path.join(toy_dir, name), "rb")).read())
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["dims"][0]["max"] = 1 << 40
    (folder / "manifest.json").write_text(json.dumps(manifest))
    _one_line(run_main("run", str(folder), "--random-input"), 1, "was changed after the build")
    manifest["build_id"] = json_sha256(manifest)  # sealed again: the library still disagrees
    (folder / "manifest.json").write_text(json.dumps(manifest))
    _one_line(run_main("run", str(folder), "--random-input"), 1, "come from different builds")


def test_bench_names_no_file_before_the_spec_is_checked(tmp_path):
    """`bench --dtype` writes a copy of the spec named after its model: a name such as
    '../../x' is refused (located) before anything is written."""
    spec = tmp_path / "evil.yaml"
    spec.write_text("apiVersion: ait-build/v1\nkind: Model\nname: ../../escaped\n"
                    "inputs: {x: {shape: [4]}}\ngraph: [{op: relu}]\noutputs: [relu]\n")
    before = set(os.listdir(tmp_path))
    proc = run_main("bench", str(spec), "--dtype", "float16", cwd=str(tmp_path))
    _one_line(proc, 1, f"{spec}:3:7: error: model name '../../escaped' may only hold")
    assert set(os.listdir(tmp_path)) == before
    assert not os.path.exists(os.path.join(ROOT, "build", "escaped_float16.yaml"))


def test_check_with_nan_in_both_is_agreement():
    from ait_build.cli.run import compare
    import numpy as np
    ours = {"y": np.array([np.nan, 1.0, np.inf], np.float32)}
    assert compare(ours, {"y": np.array([np.nan, 1.0, np.inf], np.float32)}, "float32")[0].endswith(" ok")
    lines = compare(ours, {"y": np.array([0.0, 1.0, np.inf], np.float32)}, "float32")
    assert lines[0].endswith("MISMATCH")


@pytest.mark.parametrize("text, words", [
    ("apiVersion: ait-build/v1\nkind: Model\nname: big\ndescription: '" + "x" * (9 << 20) + "'\n",
     ":1:1: error: file is larger than 8 MiB"),
    ("apiVersion: ait-build/v1\nkind: Model\nname: deep\ngraph: " + "[" * 100 + "]" * 100 + "\n",
     "error: nesting deeper than 64 levels"),
], ids=["9MiB", "deep"])  # short ids: pytest puts the id in PYTEST_CURRENT_TEST, which children inherit
def test_build_reads_the_spec_with_limits_before_scons(tmp_path, text, words):
    """`ait-build build` used to parse with an unbounded yaml.safe_load first (a 50 MB spec took
    minutes, deep nesting raised RecursionError)."""
    import time
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    start = time.perf_counter()
    _one_line(_cli("build", str(spec), "--target", "cpu"), 1, words)
    assert time.perf_counter() - start < 30


@pytest.mark.parametrize("args", [
    ["run", "{toy}", "--inputs", "{fifo}"],
    ["reference", MLP, "--random-input", "--weights", "{fifo}"],
    ["reference", MLP, "--inputs", "{fifo}"],
])
def test_a_fifo_is_refused_not_read(toy_dir, tmp_path, args):
    """Reading a FIFO (or a device) would block forever: only regular files are read."""
    fifo = str(tmp_path / "pipe.safetensors")
    os.mkfifo(fifo)
    _one_line(_cli(*[a.format(toy=toy_dir, fifo=fifo) for a in args]), 1, "not a regular file")


@pytest.mark.parametrize("name, words", [
    ("libtoy.so", "not a regular file (a FIFO)"),
    ("libtoy.so.sha256", "libtoy.so.sha256 is missing or unreadable"),
    ("manifest.json", "not a regular file (a FIFO)"),
    ("weights.safetensors", "is not a regular file"),
])
def test_a_build_folder_file_that_is_a_fifo_is_refused_not_read(toy_dir, tmp_path, name, words):
    """A build folder whose library, digest or manifest was replaced by a FIFO: `ait-build run`
    (and Model()) open every file non-blocking and refuse it (they used to wait forever)."""
    folder = tmp_path / "toy"
    shutil.copytree(toy_dir, folder)
    os.remove(folder / name)
    os.mkfifo(folder / name)
    proc = _cli("run", str(folder), "--random-input", timeout=60)
    assert proc.returncode == 1 and words in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_reference_writes_every_intermediate(tmp_path):
    """`ait-build reference --intermediates FILE`: every tensor by its graph name, for
    comparing a port layer by layer."""
    from safetensors.numpy import load_file
    dump = tmp_path / "all.safetensors"
    proc = run_main("reference", MLP, "--random-input", "--batch", "2", "--intermediates", str(dump))
    assert proc.returncode == 0, proc.stderr
    values = load_file(str(dump))
    assert {"x", "fc1", "gelu", "fc2", "softmax"} <= set(values)
    assert values["fc1"].shape == (2, 64)
    np.testing.assert_allclose(values["softmax"].sum(axis=-1), 1.0, rtol=1e-6)
    _one_line(run_main("reference", MLP, "--random-input", "--intermediates", str(tmp_path)), 1,
              "is a directory")


def test_nan_and_infinite_inputs_give_no_numpy_warnings(tmp_path):
    """`reference` (and `run --check`, which runs the same executor) with NaN and infinite
    inputs: they propagate as values, without RuntimeWarnings from NumPy on stderr."""
    from safetensors.numpy import save_file
    x = np.ones((2, 32), np.float32)
    x[0, 0], x[1, 1], x[1, 2] = np.inf, np.nan, -np.inf
    save_file({"x": x}, str(tmp_path / "x.safetensors"))
    proc = _cli("reference", MLP, "--inputs", str(tmp_path / "x.safetensors"))
    assert proc.returncode == 0 and "softmax: float32[2, 16] mean=nan" in proc.stdout, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    from ait_build.cli.run import describe
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "mean=nan" in describe("y", np.array([np.inf, -np.inf], np.float32))


IOTA = """apiVersion: ait-build/v1
kind: Model
name: positions
dims: {seq: {max: 8}}
inputs: {dummy: {shape: [1]}}
graph: [{name: positions, op: iota, shape: [seq]}]
outputs: [positions]
"""


def test_reference_takes_a_dim_no_input_names_from_dim(tmp_path):
    """A dim only an attribute uses (an iota's length) is given with --dim; without it the error
    says so (it was a KeyError)."""
    spec = tmp_path / "positions.yaml"
    spec.write_text(IOTA)
    _one_line(run_main("reference", str(spec), "--random-input"), 1,
              "no input's shape tells dim(s) seq: give --dim seq=N")
    proc = run_main("reference", str(spec), "--random-input", "--dim", "seq=3")
    assert proc.returncode == 0 and "positions: int64[3]" in proc.stdout, proc.stdout + proc.stderr


def test_reference_inputs_of_another_dtype_are_refused_as_run_refuses_them(tmp_path):
    """float64 for a float32 input (or float indices) was cast silently by `reference --inputs`,
    where `run` refuses it; a file that runs in one runs in the other."""
    from safetensors.numpy import save_file
    given = tmp_path / "in.safetensors"
    save_file({"x": np.ones((2, 32), np.float64)}, str(given))
    _one_line(run_main("reference", MLP, "--inputs", str(given)), 1,
              "input 'x' is float64; the model expects float32 (convert with .astype(...)")
    save_file({"x": np.ones((2, 32), np.float32)}, str(given))
    assert run_main("reference", MLP, "--inputs", str(given)).returncode == 0


def test_output_shapes_below_zero_at_the_given_dims_are_an_error():
    """An output [4, 4 - seq] at seq = 6 has no elements to give: the run says so, where NumPy's
    'negative dimensions' was an internal error."""
    from ait_build.runtime.manifest import ModelError, output_shapes
    manifest = type("M", (), {})()
    out = type("O", (), {"name": "r", "shape": [4, "4 - seq"], "shape_text": lambda self: "[4, 4 - seq]"})()
    manifest.name, manifest.outputs = "sl", [out]
    assert output_shapes(manifest, {"seq": 2}) == {"r": (4, 2)}
    with pytest.raises(ModelError, match=r"output 'r' \[4, 4 - seq\] would have shape \[4, -2\] at "
                                         r"seq=6: the model has no output at these dims"):
        output_shapes(manifest, {"seq": 6})


def test_out_of_memory_is_an_error_not_a_bug(monkeypatch):
    """Tensors too large for the machine at the dims asked for are the input's limit, exit 1."""
    from ait_build.cli import check

    def out_of_memory(args):
        raise MemoryError()

    monkeypatch.setattr(check, "run", out_of_memory)
    _one_line(run_main("check", MLP), 1, "error: out of memory")


def test_a_bfloat16_model_takes_bfloat16_inputs_from_a_file(tmp_path):
    """A BF16 tensor in --inputs was 'data type bfloat16 not understood' (NumPy knows the type
    only once ml_dtypes is imported), while a float32 one is refused as not bfloat16: a bfloat16
    model could take no inputs from a file. In a fresh process, where nothing imported it yet."""
    import ml_dtypes
    from safetensors.numpy import save_file
    with open(MLP, encoding="utf-8") as fh:
        (tmp_path / "mlp.yaml").write_text(fh.read().replace("dtype: float32", "dtype: bfloat16"))
    x = np.random.default_rng(0).standard_normal((2, 32)).astype(ml_dtypes.bfloat16)
    save_file({"x": x}, str(tmp_path / "in.safetensors"))
    proc = subprocess.run([sys.executable, "-m", "ait_build", "reference", "mlp.yaml", "--inputs",
                           "in.safetensors"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("softmax: float32[2, 16]")
