"""Device memory for cuda builds without PyTorch: the CUDA runtime through ctypes, DLPack and
`__cuda_array_interface__` inputs read without copies, and outputs that any DLPack consumer
(torch.from_dlpack, cupy.from_dlpack, jax.dlpack.from_dlpack) takes without copies.

libcudart comes from the nvidia-cuda-runtime wheel (the `cuda` extra) or the system. Its device
pointers are valid for the model library, which links its own static runtime: both use the
device's primary context, as PyTorch and the library already do together.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import glob
import os
import sys

import numpy as np

from ait_build.runtime.manifest import ModelError

MEMCPY_HOST_TO_DEVICE, MEMCPY_DEVICE_TO_HOST = 1, 2
DL_CPU, DL_CUDA, DL_CUDA_MANAGED = 1, 2, 13
# DLPack dtype codes: int, uint, float, bfloat, bool
DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}
DL_BFLOAT = 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]
# the destructor gets the dying capsule as a raw pointer: as a py_object it would be revived
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_capi = ctypes.pythonapi
_capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_IsValid.restype = ctypes.c_int
_capi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_New.restype = ctypes.py_object
_capi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, CAPSULE_DESTRUCTOR]
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _capi))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _capi))


# -- the CUDA runtime -----------------------------------------------------------------------------
def libcudart_candidates() -> list:
    """Where libcudart may be: the nvidia-cuda-runtime wheels (CUDA 13, then 12), the loader's
    search path, the usual toolkit folder."""
    found = []
    for entry in sys.path:
        found += sorted(glob.glob(os.path.join(entry, "nvidia", "cu13", "lib", "libcudart.so.*")))
        found += sorted(glob.glob(os.path.join(entry, "nvidia", "cuda_runtime", "lib", "libcudart.so.*")))
    name = ctypes.util.find_library("cudart")
    return found + ([name] if name else []) + ["/usr/local/cuda/lib64/libcudart.so"]


class PointerAttributes(ctypes.Structure):
    """cudaPointerAttributes (CUDA 11 and later)."""

    _fields_ = [("type", ctypes.c_int), ("device", ctypes.c_int),
                ("devicePointer", ctypes.c_void_p), ("hostPointer", ctypes.c_void_p)]


class CudaRuntime:
    """The few CUDA runtime calls the Python runtime needs; failures raise ModelError."""

    def __init__(self, candidates=None):
        tried = []
        for path in candidates or libcudart_candidates():
            try:
                self.lib = ctypes.CDLL(path)
                self.path = path
                break
            except OSError as exc:
                tried.append(f"{path} ({exc})")
        else:
            raise ModelError("cuda builds need the CUDA runtime library (libcudart) to take NumPy "
                             "arrays: pip install nvidia-cuda-runtime (ait-build's `cuda` "
                             "extra); tried " + "; ".join(tried))
        lib = self.lib
        lib.cudaGetErrorString.restype = ctypes.c_char_p
        lib.cudaGetErrorString.argtypes = [ctypes.c_int]
        lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        lib.cudaFree.argtypes = [ctypes.c_void_p]
        lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        lib.cudaGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_int)]
        lib.cudaGetDevice.argtypes = [ctypes.POINTER(ctypes.c_int)]
        lib.cudaSetDevice.argtypes = [ctypes.c_int]
        lib.cudaPointerGetAttributes.argtypes = [ctypes.POINTER(PointerAttributes), ctypes.c_void_p]
        lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]

    def check(self, status: int, what: str) -> None:
        if status:
            text = self.lib.cudaGetErrorString(status)
            raise ModelError(f"{what} failed: CUDA error {status} "
                             f"({text.decode() if text else 'unknown'})")

    def device_count(self) -> int:
        count = ctypes.c_int(0)
        self.check(self.lib.cudaGetDeviceCount(ctypes.byref(count)), "cudaGetDeviceCount")
        return count.value

    def get_device(self) -> int:
        """The calling thread's current device (shared with the library's own runtime and
        PyTorch's: all of them use the device's primary context)."""
        device = ctypes.c_int(0)
        self.check(self.lib.cudaGetDevice(ctypes.byref(device)), "cudaGetDevice")
        return device.value

    def set_device(self, device: int) -> None:
        self.check(self.lib.cudaSetDevice(device), f"cudaSetDevice({device})")

    def pointer_device(self, ptr: int) -> int:
        """The device whose memory `ptr` points into (an __cuda_array_interface__ array does not
        say)."""
        attributes = PointerAttributes()
        self.check(self.lib.cudaPointerGetAttributes(ctypes.byref(attributes), ctypes.c_void_p(ptr)),
                   "cudaPointerGetAttributes")
        return attributes.device

    def malloc(self, nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        self.check(self.lib.cudaMalloc(ctypes.byref(ptr), max(1, nbytes)), f"cudaMalloc({nbytes})")
        return ptr.value

    def free(self, ptr: int) -> None:
        self.lib.cudaFree(ctypes.c_void_p(ptr))

    def to_device(self, array: np.ndarray, device: int | None = None) -> "DeviceArray":
        """A copy of `array` in the memory of `device` (None: the current one, taken as 0)."""
        array = np.asarray(array, order="C")  # (np.ascontiguousarray makes 0-d arrays 1-d)
        out = DeviceArray.empty(self, array.shape, array.dtype, device)
        self.check(self.lib.cudaMemcpy(out.ptr, array.ctypes.data, array.nbytes,
                                       MEMCPY_HOST_TO_DEVICE), "copying an input to the device")
        return out

    def to_host(self, array: "DeviceArray") -> np.ndarray:
        out = np.empty(array.shape, array.dtype)
        self.check(self.lib.cudaMemcpy(out.ctypes.data, array.ptr, out.nbytes,
                                       MEMCPY_DEVICE_TO_HOST), "copying an output to the host")
        return out

    def synchronize(self, stream: int = 0) -> None:
        self.check(self.lib.cudaStreamSynchronize(ctypes.c_void_p(stream)), "cudaStreamSynchronize")


@functools.lru_cache(maxsize=1)
def runtime() -> CudaRuntime:
    return CudaRuntime()


# -- arrays on the device -------------------------------------------------------------------------
class DeviceArray:
    """A dense row-major array in device memory (`ptr`), freed when the last holder lets go: the
    array itself or a DLPack consumer of it. `__dlpack__` and `__cuda_array_interface__` hand it
    to PyTorch, CuPy, JAX or Numba without a copy; `numpy()` copies it to the host."""

    def __init__(self, ptr: int, shape, dtype, free=None, device=(DL_CUDA, 0)):
        self.ptr, self.shape, self.dtype = ptr, tuple(int(d) for d in shape), np.dtype(dtype)
        self._free, self.device = free, device
        self.home = None  # the device it was allocated on by empty(device=N), made current to copy

    @classmethod
    def empty(cls, rt: CudaRuntime, shape, dtype, device: int | None = None) -> "DeviceArray":
        """Uninitialized memory on `device`, which must be current (None: the current device,
        taken as 0), freed there."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if device is None:
            return cls(rt.malloc(nbytes), shape, dtype, free=rt.free)
        array = cls(rt.malloc(nbytes), shape, dtype, free=functools.partial(free_on, rt, device),
                    device=(DL_CUDA, device))
        array.home = device
        return array

    def __del__(self):
        free, self._free = getattr(self, "_free", None), None
        if free is not None and self.ptr:
            free(self.ptr)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def numpy(self) -> np.ndarray:
        rt = runtime()
        with on_device(rt, self.home):
            return rt.to_host(self)

    def __repr__(self) -> str:
        return f"DeviceArray({self.dtype}{list(self.shape)} at {self.ptr:#x})"

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def __dlpack_device__(self) -> tuple:
        return self.device

    def __dlpack__(self, stream=None, **kwargs):
        """A DLPack capsule over this memory. The library's work is finished when run() returns
        (it synchronizes), so no stream needs to wait."""
        return export_dlpack(self)


@contextlib.contextmanager
def on_device(rt, device: int | None):
    """Makes `device` the calling thread's current device for the block, then the caller's again
    (None: leaves the current device alone). `rt`: a CudaRuntime or devices.TorchDevices."""
    if device is None:
        yield
        return
    previous = rt.get_device()
    if previous != device:
        rt.set_device(device)
    try:
        yield
    finally:
        if previous != device:
            rt.set_device(previous)


def free_on(rt, device: int, ptr: int) -> None:
    with on_device(rt, device):
        rt.free(ptr)


_EXPORTED: dict = {}  # address of a DLManagedTensor -> what keeps it and its array alive


@DELETER
def _delete_managed(managed):
    _EXPORTED.pop(ctypes.addressof(managed.contents), None)


@CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # A capsule no consumer took (still named "dltensor") deletes its tensor itself; a consumer
    # renames it "used_dltensor" and calls the deleter when done.
    if _raw_is_valid(capsule, b"dltensor"):
        _EXPORTED.pop(_raw_get_pointer(capsule, b"dltensor"), None)


def export_dlpack(array: DeviceArray):
    shape = (ctypes.c_int64 * max(1, len(array.shape)))(*array.shape)
    managed = DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data, tensor.ndim, tensor.shape, tensor.byte_offset = array.ptr, len(array.shape), shape, 0
    tensor.device = DLDevice(*array.device)
    tensor.dtype = dlpack_dtype(array.dtype)
    managed.deleter = _delete_managed
    address = ctypes.addressof(managed)
    _EXPORTED[address] = (managed, shape, array)
    return _capi.PyCapsule_New(address, b"dltensor", _capsule_destructor)


def dlpack_dtype(dtype: np.dtype) -> DLDataType:
    if dtype.name == "bfloat16":
        return DLDataType(DL_BFLOAT, 16, 1)
    if dtype.kind not in DL_CODES:
        raise ModelError(f"no DLPack code for dtype {dtype}")
    return DLDataType(DL_CODES[dtype.kind], dtype.itemsize * 8, 1)


# -- arrays from other libraries ------------------------------------------------------------------
class ForeignArray:
    """Another library's array read in place: its pointer, shape, dtype and device, and the
    object (a DLPack capsule or the array) that must live while the pointer is used."""

    def __init__(self, ptr, shape, dtype, device, contiguous, keep):
        self.ptr, self.shape, self.dtype = ptr, tuple(shape), dtype
        self.device, self.contiguous, self.keep = device, contiguous, keep


def read_dlpack(value, stream: int | None = 1) -> ForeignArray:
    """The DLTensor behind value.__dlpack__(). `stream` (1: the legacy default stream, which
    the library runs on) tells a CUDA producer which stream will read it, so that it orders its
    own work before; host producers get None, as the protocol asks."""
    device = value.__dlpack_device__() if hasattr(value, "__dlpack_device__") else None
    if device is not None and device[0] not in (DL_CUDA, DL_CUDA_MANAGED):
        stream = None
    try:
        capsule = value.__dlpack__(stream=stream)
    except TypeError:  # producers of DLPack before stream=
        capsule = value.__dlpack__()
    if not _capi.PyCapsule_IsValid(capsule, b"dltensor"):
        raise ModelError(f"{type(value).__name__}.__dlpack__() did not return a DLPack capsule")
    managed = ctypes.cast(_capi.PyCapsule_GetPointer(capsule, b"dltensor"),
                          ctypes.POINTER(DLManagedTensor)).contents
    t = managed.dl_tensor
    shape = [t.shape[i] for i in range(t.ndim)]
    dtype = numpy_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    contiguous = not t.strides or [t.strides[i] for i in range(t.ndim)] == row_major(shape)
    return ForeignArray((t.data or 0) + t.byte_offset, shape, dtype,
                        (t.device.device_type, t.device.device_id), contiguous, capsule)


def read_cuda_array_interface(value) -> ForeignArray:
    cai = value.__cuda_array_interface__
    dtype = np.dtype(cai["typestr"])
    shape = list(cai["shape"])
    strides = cai.get("strides")
    contiguous = strides is None or [s // dtype.itemsize for s in strides] == row_major(shape)
    if cai.get("stream"):  # the producer's work on that stream must finish before we read
        runtime().synchronize(int(cai["stream"]))
    return ForeignArray(cai["data"][0], shape, dtype, (DL_CUDA, 0), contiguous, value)


def numpy_dtype(code: int, bits: int, lanes: int) -> np.dtype | None:
    if lanes != 1:
        return None
    if code == DL_BFLOAT and bits == 16:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    kinds = {0: "i", 1: "u", 2: "f", 6: "b"}
    if code not in kinds:
        return None
    try:
        return np.dtype("?" if code == 6 else f"{kinds[code]}{bits // 8}")
    except TypeError:
        return None


def row_major(shape) -> list:
    """Strides in elements of a dense row-major array of `shape`."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(1, size)
    return strides[::-1]
