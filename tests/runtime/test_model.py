"""The Python runtime over a hand-written library with the generated C API (toy_model.cpp)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ait_build.runtime import Model, ModelError
from toylib import TOY_WEIGHTS, toy_expected


def _inputs(batch=2, seq=3, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((batch, 4)).astype(np.float32),
            "tokens": rng.integers(0, 10, batch * seq).astype(np.int64)}


@pytest.fixture
def toy(toy_dir):
    with Model(toy_dir) as model:
        yield model


def test_run_binds_dims_and_allocates_outputs(toy):
    inputs = _inputs(batch=5, seq=7)
    out = toy.run(inputs)
    want = toy_expected(inputs["x"], inputs["tokens"])
    assert set(out) == {"y", "count"}
    assert out["y"].shape == (5, 4) and out["count"].shape == (5,)
    np.testing.assert_array_equal(out["y"], want["y"])
    np.testing.assert_array_equal(out["count"], want["count"])


def test_non_contiguous_input_is_copied(toy):
    inputs = _inputs(batch=4, seq=2)
    wide = np.zeros((4, 8), np.float32)
    wide[:, ::2] = inputs["x"]
    out = toy.run({"x": wide[:, ::2], "tokens": inputs["tokens"]})
    np.testing.assert_array_equal(out["y"], toy_expected(inputs["x"], inputs["tokens"])["y"])


def test_a_rank_0_input_stays_rank_0():
    """A scalar input (a spec shape []) reaches the library as the 0-d array it is:
    np.ascontiguousarray made it [1], which the rank check then refused."""
    model = Model.__new__(Model)  # only the manifest's inputs are read; no library is loaded
    model.manifest = SimpleNamespace(name="scalar", inputs=[
        SimpleNamespace(name="x", dtype="float32", shape=())])
    arrays = model._check_inputs({"x": np.array(2.0, np.float32)})
    assert arrays["x"].shape == () and arrays["x"] == 2.0


@pytest.mark.parametrize("change, message", [
    (lambda i: i.pop("tokens"), "missing input(s) tokens; the model takes x, tokens"),
    (lambda i: i.update(extra=i["x"]), "unknown input(s) extra"),
    # keys that are not names (an input's spec object, a position) are named by their repr
    (lambda i: i.update({("x",): i["x"], 0: i["x"]}), "unknown input(s) ('x',), 0"),
    (lambda i: i.update(x=i["x"].astype(np.float64)), "input 'x' is float64; the model expects float32"),
    (lambda i: i.update(tokens=i["tokens"].astype(np.int32)), "the model expects int64"),
    (lambda i: i.update(x=i["x"].tolist()), "must be a NumPy array of float32, got a list"),
    (lambda i: i.update(x=i["x"][None]), "expected rank 2 [batch, 4]"),
    (lambda i: i.update(x=np.zeros((2, 5), np.float32)), "axis 1 must be 4"),
    (lambda i: i.update(x=np.zeros((65, 4), np.float32), tokens=np.zeros(65, np.int64)),
     "dim 'batch' is 65, outside the model's range [1, 64]"),
    (lambda i: i.update(tokens=np.zeros(7, np.int64)), "cannot tell dim(s) seq"),
    (lambda i: i.update(tokens=np.zeros(2 * 33, np.int64)), "dim 'seq' is 33, outside"),
])
def test_bad_inputs_raise_clear_errors(toy, change, message):
    inputs = _inputs()
    change(inputs)
    with pytest.raises(ModelError) as err:
        toy.run(inputs)
    assert message in str(err.value)


@pytest.mark.parametrize("inputs, message", [
    (lambda i: list(i.values()), "toy.run takes inputs as a dict of name -> array, got a list"),
    (lambda i: None, "toy.run takes inputs as a dict of name -> array, got None"),
    (lambda i: dict(i, x=np.float32(1.0)), "input 'x' must be a NumPy array of float32, got a "
                                           "numpy.float32 scalar (wrap it with np.asarray)"),
])
def test_what_is_not_a_dict_of_arrays_is_named(toy, inputs, message):
    """A list, None or a NumPy scalar: a ModelError naming what was given (a list used to be an
    AttributeError, a scalar 'got float32', which reads like the right dtype)."""
    with pytest.raises(ModelError) as err:
        toy.run(inputs(_inputs()))
    assert str(err.value) == message


def test_given_dims_are_checked_against_shapes(toy):
    inputs = _inputs(batch=2, seq=3)
    assert toy.run(inputs, dims={"seq": 3})["count"].shape == (2,)
    with pytest.raises(ModelError, match=r"axis 0 is 6, but batch\*seq = 8"):
        toy.run(inputs, dims={"seq": 4})
    with pytest.raises(ModelError, match="unknown dim"):
        toy.run(inputs, dims={"sequence": 3})
    with pytest.raises(ModelError, match=r"unknown dim\(s\) \('seq',\), 1"):
        toy.run(inputs, dims={("seq",): 3, 1: 3})  # not names: each by its repr


def test_library_error_becomes_an_exception_with_its_message(toy):
    inputs = _inputs()
    inputs["tokens"][1] = -5
    with pytest.raises(ModelError, match=r"run failed \(code 1\): token -5 is negative"):
        toy.run(inputs)
    assert toy.run(_inputs())["y"].shape == (2, 4)  # the model still works afterwards


def test_close_is_idempotent_and_later_runs_fail(toy_dir):
    model = Model(toy_dir)
    model.close()
    model.close()
    with pytest.raises(ModelError, match="closed"):
        model.run(_inputs())


def test_truncated_weights_raise_never_crash(toy_dir, tmp_path):
    """The runtime compares the size with the manifest's before the library reads the file (the
    library's own check is tested on a generated model in tests/build/test_end_to_end.py)."""
    bad = str(tmp_path / "toy")
    shutil.copytree(toy_dir, bad)
    with open(os.path.join(bad, "weights.safetensors"), "r+b") as fh:
        fh.truncate(10)
    proc = subprocess.run([sys.executable, "-m", "ait_build", "run", bad, "--random-input"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 1: a reported error, < 0: a signal
    assert "has 10 bytes" in proc.stderr


def test_not_a_build_directory(tmp_path):
    with pytest.raises(ModelError, match="cannot read the manifest"):
        Model(str(tmp_path))


@pytest.mark.parametrize("build_dir, got", [(None, "None"), (3, "an int"),
                                              (b"build/cpu/mlp", "a bytes"), (["a"], "a list")])
def test_a_build_dir_that_is_not_a_path_is_named(build_dir, got):
    """It was os.path's TypeError ('expected str, bytes or os.PathLike object') from inside."""
    with pytest.raises(ModelError, match=f"Model takes build_dir as the path of a build folder "
                                         rf"\(a str or os.PathLike\), got {got}$"):
        Model(build_dir)


def test_a_file_of_the_build_is_not_taken_for_its_folder(toy_dir):
    """It said '.../libtoy.so/manifest.json: cannot read the manifest (Not a directory)'."""
    lib = next(os.path.join(toy_dir, f) for f in os.listdir(toy_dir) if f.endswith(".so"))
    with pytest.raises(ModelError, match=f"{re.escape(lib)} is a file: give the build folder "
                                         f".* e.g. {re.escape(os.path.abspath(toy_dir))}$"):
        Model(lib)


def test_weights_that_are_not_a_path_are_named(toy_dir):
    with pytest.raises(ModelError, match="Model takes weights= as the path of a weights file "
                                         r"\(a str or os.PathLike\), got an int"):
        Model(toy_dir, weights=3)
    with Model(Path(toy_dir), weights=Path(toy_dir) / "weights.safetensors") as model:
        assert model.build_dir == os.path.abspath(toy_dir)


def test_close_returns_while_other_threads_keep_calling(toy_dir):
    """close() refuses new calls and waits only for those in flight: callers that loop on run()
    cannot hold it open."""
    import threading
    import time
    model = Model(toy_dir)
    inputs = _inputs()
    refused = []
    deadline = time.monotonic() + 30  # each caller loops until refused (a loaded machine may
    # not run a caller between close() and the end of the test: no stop flag cuts it short)

    def hammer():
        while time.monotonic() < deadline:
            try:
                model.run(inputs)
            except ModelError as exc:
                refused.append(str(exc))
                return

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    closer = threading.Thread(target=model.close)
    closer.start()
    closer.join(timeout=30)
    for t in threads:
        t.join(timeout=40)
    assert not closer.is_alive(), "close() did not return"
    assert len(refused) == 4 and all("closed" in r for r in refused)


def test_a_fifo_as_weights_file_is_refused_not_read(toy_dir, tmp_path):
    fifo = str(tmp_path / "weights.fifo")
    os.mkfifo(fifo)
    with pytest.raises(ModelError, match="is not a regular file"):
        Model(toy_dir, weights=fifo)


def test_weights_given_by_the_caller_need_only_fit_the_layout(toy_dir, tmp_path):
    """The manifest's SHA-256 is for the build's own file; another file of the right size (new
    values for the same layout) loads, and its values are used."""
    other = str(tmp_path / "other.safetensors")
    (TOY_WEIGHTS * 2).tofile(other)
    inputs = _inputs()
    with Model(toy_dir, weights=other) as model:
        np.testing.assert_array_equal(model.run(inputs)["y"], inputs["x"] * TOY_WEIGHTS * 2)
