"""The generated C API never crashes on bad input: NULL pointers, dims out of range, bad indices,
missing/truncated/foreign weights files all give an error code and a message. run() is safe to
call from several threads at once."""

from __future__ import annotations

import ctypes
import os
import shutil
import threading

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

from backends.cpu.helpers import tolerance, write_spec

OK, ARGUMENT, SHAPE, WEIGHTS = 0, 1, 2, 3

API_MODEL = dict(
    dims={"batch": {"min": 1, "max": 16, "opt": 4}},
    inputs={"ids": {"shape": ["batch", 5], "dtype": "int64"}},
    graph=[{"name": "emb", "op": "embedding", "num_embeddings": 11, "embedding_dim": 24},
           {"name": "fc", "op": "linear", "out_features": 32, "activation": "gelu"},
           {"name": "ln", "op": "layer_norm"},
           {"name": "out", "op": "linear", "out_features": 8}],
    outputs=["out"])


@pytest.fixture(scope="module")
def api(tmp_path_factory, build_spec):
    spec = write_spec(tmp_path_factory.mktemp("api"), "api", **API_MODEL)
    model, out_dir, _ = build_spec(spec, name="api")
    return model, out_dir, load_model(spec)


def call_run(model, dims, inputs, outputs):
    return model.run_fn(model.handle, dims, inputs, outputs, None)


def buffers(batch=2):
    ids = np.arange(batch * 5, dtype=np.int64).reshape(batch, 5) % 11
    out = np.zeros((batch, 5, 8), np.float32)
    return (ids, out, (ctypes.c_int64 * 1)(batch), (ctypes.c_void_p * 1)(ids.ctypes.data),
            (ctypes.c_void_p * 1)(out.ctypes.data))


def test_null_pointers_are_argument_errors(api):
    model = api[0]
    ids, out, dims, ins, outs = buffers()
    assert call_run(model, dims, None, outs) == ARGUMENT
    assert "inputs is NULL" in model.error()
    assert call_run(model, None, ins, outs) == ARGUMENT
    assert "dims is NULL" in model.error()
    null_in = (ctypes.c_void_p * 1)(None)
    assert call_run(model, dims, null_in, outs) == ARGUMENT
    assert "input 0 ('ids') is NULL" in model.error()
    assert model.run_fn(None, dims, ins, outs, None) == ARGUMENT
    assert model.create(None, ctypes.byref(ctypes.c_void_p())) == ARGUMENT
    assert model.create(model.weights.encode(), None) == ARGUMENT
    model.destroy(None)  # a no-op, like free(NULL)
    assert call_run(model, dims, ins, outs) == OK and model.error() == ""


@pytest.mark.parametrize("batch", [0, 17, -3])
def test_dims_outside_their_range(api, batch):
    model = api[0]
    ids, out, dims, ins, outs = buffers()
    dims[0] = batch
    assert call_run(model, dims, ins, outs) == SHAPE
    assert f"dim 'batch' is {batch}, outside [1, 16]" in model.error()


# sizes that fall below 0 at some dims in range: `tail` (seq - 4) only inside the model (its
# gram's size is static), `rest` (seq - n) an output
NEGATIVE_MODEL = dict(
    dims={"seq": {"min": 1, "max": 16, "opt": 8}, "n": {"min": 1, "max": 8, "opt": 2}},
    inputs={"x": {"shape": ["seq", 8], "dtype": "float32"}},
    graph=[{"name": "tail", "op": "slice", "axis": 0, "start": 4},
           {"name": "tail_t", "op": "transpose", "dim0": 0, "dim1": 1},
           {"name": "gram", "op": "matmul", "inputs": ["tail_t", "tail"]},
           {"name": "rest", "op": "slice", "inputs": ["x"], "axis": 0, "start": "n", "end": "seq"}],
    outputs=["gram", "rest"])


@pytest.fixture(scope="module")
def negative(tmp_path_factory, build_spec):
    spec = write_spec(tmp_path_factory.mktemp("negative"), "negative", **NEGATIVE_MODEL)
    return build_spec(spec, name="negative")[0]


@pytest.mark.parametrize("seq, n, message", [
    (2, 1, "tensor 'tail' [seq - 4, 8] would have size seq - 4 = -2: the model has no output at "
           "these dims"),
    (6, 8, "tensor 'rest' [-1*n + seq, 8] would have size -1*n + seq = -2"),
])
def test_dims_giving_a_size_below_zero(negative, seq, n, message):
    """Dims in their ranges at which a tensor's size falls below 0 are refused like dims outside
    their ranges (they ran the kernels on negative sizes); the others run."""
    model = negative
    assert [d["name"] for d in model.manifest["dims"]] == ["seq", "n"]
    x = np.ones((16, 8), np.float32)
    gram, rest = np.zeros((8, 8), np.float32), np.zeros((16, 8), np.float32)
    ins = (ctypes.c_void_p * 1)(x.ctypes.data)
    outs = (ctypes.c_void_p * 2)(gram.ctypes.data, rest.ctypes.data)
    assert call_run(model, (ctypes.c_int64 * 2)(seq, n), ins, outs) == SHAPE
    assert message in model.error() and model.error().startswith("ait_negative_run: ")
    assert call_run(model, (ctypes.c_int64 * 2)(7, 3), ins, outs) == OK, model.error()
    np.testing.assert_array_equal(gram, np.full((8, 8), 3, np.float32))


def test_bad_index_is_an_error_not_a_crash(api):
    model = api[0]
    ids, out, dims, ins, outs = buffers()
    ids[1, 3] = 11
    assert call_run(model, dims, ins, outs) == ARGUMENT
    assert "embedding 'emb': index 11 at position 8 is out of range [0, 11)" in model.error()
    ids[1, 3] = -1  # embedding (like PyTorch's) takes no negative ids
    assert call_run(model, dims, ins, outs) == ARGUMENT



def test_time_steps_times_every_call_and_matches_run(api):
    """time_steps() runs the model like run() and gives each kernel call's wall time."""
    model = api[0]
    count = model.lib[model.manifest["c_name"] + "_num_steps"]()
    timed = model.lib[model.manifest["c_name"] + "_time_steps"]
    timed.argtypes = [ctypes.c_void_p] * 5 + [ctypes.POINTER(ctypes.c_float), ctypes.c_int]
    ids, out, dims, ins, outs = buffers()
    assert call_run(model, dims, ins, outs) == OK
    expected = out.copy()
    out[:] = 0
    ms = (ctypes.c_float * count)()
    assert timed(model.handle, dims, ins, outs, None, ms, count) == OK
    assert count >= 4 and all(t >= 0.0 for t in ms) and sum(ms) > 0.0
    np.testing.assert_array_equal(out, expected)
    assert timed(model.handle, dims, ins, outs, None, ms, count + 1) == ARGUMENT
    assert f"step_ms must hold {count} floats" in model.error()
    assert timed(model.handle, dims, None, outs, None, ms, count) == ARGUMENT
    assert "_time_steps: inputs is NULL" in model.error()

def test_last_error_is_per_thread(api):
    model = api[0]
    ids, out, dims, ins, outs = buffers()
    dims[0] = 99
    assert call_run(model, dims, ins, outs) == SHAPE
    seen = []
    t = threading.Thread(target=lambda: seen.append(model.error()))
    t.start()
    t.join()
    assert seen == [""] and "outside" in model.error()


def _create(model, path) -> tuple:
    handle = ctypes.c_void_p()
    rc = model.create(str(path).encode(), ctypes.byref(handle))
    if handle:
        model.destroy(handle)
    return rc, model.error()


def test_bad_weights_files(api, tmp_path):
    model, out_dir, _ = api
    good = os.path.join(out_dir, "weights.safetensors")
    data = open(good, "rb").read()
    cases = {
        "missing": None,
        "empty": b"",
        "truncated_header": data[:40],
        "truncated_data": data[:-100],
        "too_long": data + b"\0" * 8,
        "garbage": b"\xff" * len(data),
    }
    # a header for another model: same file with one tensor renamed (same length, other bytes)
    cases["other_model"] = data.replace(b"emb.weight", b"emb.weighz", 1)
    expected = {"missing": "cannot open", "empty": "not a safetensors file",
                "truncated_header": "truncated inside its header", "truncated_data": "truncated",
                "too_long": "too long", "garbage": "header", "other_model": "does not match"}
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        rc, message = _create(model, path)
        assert rc == WEIGHTS, name
        assert expected[name] in message and str(path) in message, (name, message)
    assert _create(model, good)[0] == OK


def test_a_weights_path_that_is_no_file_says_what_it_is(api, tmp_path):
    """A folder was 'not a safetensors file (under 8 bytes)'; a FIFO blocked create() until
    something wrote to it."""
    model = api[0]
    assert _create(model, tmp_path) == (WEIGHTS, f"weights file '{tmp_path}' is a folder, not a "
                                                 "file")
    fifo = tmp_path / "weights.fifo"
    os.mkfifo(fifo)
    assert _create(model, fifo) == (WEIGHTS, f"weights file '{fifo}' is not a regular file")


def test_weights_from_another_build_of_the_same_shapes_load(api, tmp_path):
    model, out_dir, graph = api
    other = tmp_path / "w.safetensors"
    shutil.copy(os.path.join(out_dir, "weights.safetensors"), other)
    assert _create(model, other)[0] == OK


def test_concurrent_runs_match_serial(api):
    model, _, graph = api
    batches = [1, 3, 16, 7, 2, 16, 5, 9]
    feeds = [random_inputs(graph, {"batch": b}, seed=i) for i, b in enumerate(batches)]
    serial = [model.run(f)["out"] for f in feeds]
    results = [None] * len(feeds)

    def work(i):
        for _ in range(5):
            got = model.run(feeds[i])["out"]
            if results[i] is None:
                results[i] = got
            assert np.array_equal(got, results[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(feeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, f in enumerate(feeds):
        np.testing.assert_array_equal(results[i], serial[i])
        ref = run_reference(graph, f)["out"]
        np.testing.assert_allclose(serial[i], ref, **tolerance(ref))
