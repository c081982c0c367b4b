"""The cuda runtime path without PyTorch (ait_build/runtime/cuda.py): NumPy arrays copied to the
device and back, DLPack and __cuda_array_interface__ arrays read in place, DeviceArray outputs
that DLPack consumers take without copies. No GPU here: the toy library (host code) stands in
for a cuda build and a host-memory runtime for libcudart, so what is checked is everything but
the CUDA calls themselves (tests/backends/cuda/test_gpu_arrays.py runs them on a GPU)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ait_build.runtime import Model, ModelError, cuda
from toylib import build_toy, toy_expected


@pytest.fixture(scope="module")
def cuda_toy(toy_dir, tmp_path_factory) -> str:
    """The toy library built with a manifest saying it was built for h200 (its build_id, which
    the library returns, follows the manifest); toy_dir skips where g++ is missing."""
    return build_toy(str(tmp_path_factory.mktemp("cuda_toy")), target="h200", backend="cuda",
                     device="cuda")


def _inputs():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    tokens = np.arange(6, dtype=np.int64)
    return x, tokens


def on_device(rt, array) -> cuda.DeviceArray:
    """What another library's CUDA array looks like here: device memory, a DLPack device."""
    out = cuda.DeviceArray.empty(rt, array.shape, array.dtype)
    ctypes.memmove(out.ptr, array.ctypes.data, array.nbytes)
    return out


class DlpackOnly:
    """A producer known only by its DLPack methods (as a CuPy or JAX array is)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_numpy_in_numpy_out_without_torch(cuda_toy, host_runtime):
    x, tokens = _inputs()
    with Model(cuda_toy) as model:
        out = model.run({"x": x, "tokens": tokens})
    assert all(isinstance(v, np.ndarray) for v in out.values())
    for name, want in toy_expected(x, tokens).items():
        np.testing.assert_array_equal(out[name], want)
    assert sorted(host_runtime.copies) == ["in", "in", "out", "out"]


def test_device_arrays_are_read_in_place_and_outputs_leave_through_dlpack(cuda_toy, host_runtime):
    x, tokens = _inputs()
    dx, dtokens = on_device(host_runtime, x), on_device(host_runtime, tokens)
    with Model(cuda_toy) as model:
        out = model.run({"x": DlpackOnly(dx), "tokens": dtokens})
    assert host_runtime.copies == []  # no copy either way
    assert all(isinstance(v, cuda.DeviceArray) for v in out.values())
    assert out["y"].__cuda_array_interface__["shape"] == (3, 4)
    want = toy_expected(x, tokens)
    np.testing.assert_array_equal(host_runtime.to_host(out["y"]), want["y"])
    # a DLPack consumer sees the output's own memory (NumPy consumes only CPU tensors, so the
    # same buffer is exported once more as host memory to check the capsule and its lifetime)
    y = out.pop("y")
    view = np.from_dlpack(cuda.DeviceArray(y.ptr, y.shape, y.dtype, device=(cuda.DL_CPU, 0)))
    assert view.ctypes.data == y.ptr
    np.testing.assert_array_equal(view, want["y"])


def test_outputs_given_are_written_in_place(cuda_toy, host_runtime):
    x, tokens = _inputs()
    given = {"y": cuda.DeviceArray.empty(host_runtime, (3, 4), np.float32),
             "count": cuda.DeviceArray.empty(host_runtime, (3,), np.float32)}
    with Model(cuda_toy) as model:
        out = model.run({"x": x, "tokens": tokens}, outputs=given)
        assert out["y"] is given["y"]
        np.testing.assert_array_equal(host_runtime.to_host(given["count"]),
                                      toy_expected(x, tokens)["count"])
        with pytest.raises(ModelError, match=r"output 'y' must be a device array of float32 \[3, 4\]"):
            model.run({"x": x, "tokens": tokens},
                      outputs={"y": cuda.DeviceArray.empty(host_runtime, (3, 5), np.float32),
                               "count": given["count"]})


class CudaArrayInterface:
    def __init__(self, device_array, strides=None):
        self.memory = device_array  # the owner keeps the memory alive, as Numba's arrays do
        self.__cuda_array_interface__ = dict(device_array.__cuda_array_interface__, strides=strides)


def test_bad_device_inputs_are_one_line_errors(cuda_toy, host_runtime):
    x, tokens = _inputs()
    with Model(cuda_toy) as model:
        with pytest.raises(ModelError, match="input 'x' is float64; the model expects float32"):
            model.run({"x": on_device(host_runtime, x.astype(np.float64)), "tokens": tokens})
        with pytest.raises(ModelError, match="input 'x' is in host memory"):
            model.run({"x": DlpackOnly(x), "tokens": tokens})
        with pytest.raises(ModelError, match="input 'x' is not contiguous"):
            model.run({"x": CudaArrayInterface(on_device(host_runtime, x), strides=(4, 8)),
                       "tokens": tokens})
        with pytest.raises(ModelError, match="input 'x' must be a NumPy array or a device array"):
            model.run({"x": [[1.0]], "tokens": tokens})
        out = model.run({"x": CudaArrayInterface(on_device(host_runtime, x)), "tokens": tokens})
        np.testing.assert_array_equal(host_runtime.to_host(out["y"]), toy_expected(x, tokens)["y"])


def test_dlpack_reader_sees_the_producers_memory():
    x = np.arange(12, dtype=np.float16).reshape(3, 4)
    found = cuda.read_dlpack(x, stream=None)
    assert (found.ptr, found.shape, found.dtype, found.device) == (x.ctypes.data, (3, 4),
                                                                  np.float16, (cuda.DL_CPU, 0))
    assert found.contiguous and not cuda.read_dlpack(x[:, ::2], stream=None).contiguous
    import ml_dtypes
    assert cuda.read_dlpack(x.view(np.int16), stream=None).dtype == np.int16
    assert cuda.numpy_dtype(cuda.DL_BFLOAT, 16, 1) == np.dtype(ml_dtypes.bfloat16)


def test_exported_tensors_live_until_their_consumer_lets_go():
    import gc
    buf = np.arange(6, dtype=np.float32)
    before = len(cuda._EXPORTED)
    array = cuda.DeviceArray(buf.ctypes.data, (2, 3), np.float32, device=(cuda.DL_CPU, 0))
    view = np.from_dlpack(array)
    del array
    gc.collect()
    assert len(cuda._EXPORTED) == before + 1 and view[1, 2] == 5.0
    del view
    gc.collect()
    assert len(cuda._EXPORTED) == before
    capsule = cuda.export_dlpack(cuda.DeviceArray(buf.ctypes.data, (6,), np.float32))
    del capsule  # never consumed: the capsule's destructor lets go
    gc.collect()
    assert len(cuda._EXPORTED) == before


def test_libcudart_missing_or_without_a_gpu_is_a_clear_error():
    with pytest.raises(ModelError, match="pip install nvidia-cuda-runtime"):
        cuda.CudaRuntime(["/nonexistent/libcudart.so.13"])
    try:
        rt = cuda.CudaRuntime()
    except ModelError as exc:
        assert "nvidia-cuda-runtime" in str(exc)
        return
    try:
        assert rt.device_count() >= 0
    except ModelError as exc:  # no GPU or no driver here: CUDA's own words
        assert str(exc).startswith("cudaGetDeviceCount failed: CUDA error ")


def test_a_library_on_a_device_the_runtime_does_not_know_is_refused(toy_dir, tmp_path):
    path = build_toy(str(tmp_path), target="m1", backend="metal", device="metal")
    with pytest.raises(ModelError, match=r"live in metal memory; the Python runtime runs builds on "
                                         r"host, cuda, hip memory"):
        Model(path)


def test_a_rocm_build_takes_torch_tensors_not_numpy(toy_dir, tmp_path):
    """rocm builds run on PyTorch-for-ROCm tensors (torch's `cuda` device); NumPy arrays are
    refused with a message instead of handing host pointers to HIP kernels."""
    path = build_toy(str(tmp_path), target="mi250", backend="rocm", device="hip")
    model = Model(path)  # the toy library creates without a GPU
    with pytest.raises(ModelError, match=r"runs on PyTorch \(for ROCm\) tensors"):
        model.run({name: np.zeros(1, np.float32) for name in model.inputs})
