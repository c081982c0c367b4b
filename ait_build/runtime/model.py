"""`Model(build_dir)`: a built lib<model>.so loaded with ctypes and run on NumPy arrays.

Inputs must already have the manifest's dtype: a float64 array for a float32 input is an error,
not a silent cast (a cast would hide a 2x copy and, for float16 models, a precision loss the user
did not ask for). Non-contiguous arrays are copied to C order. The generated run() is thread-safe,
so one Model serves concurrent calls; close() refuses new calls and waits for those in flight.
Before the library is loaded, its manifest, bytes and weights are checked to be one build's
(identity.py).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import tempfile
import threading

import numpy as np

from ait_build.ir.dtypes import NUMPY, dtype_mismatch
from ait_build.runtime import cuda, devices, identity
from ait_build.runtime.manifest import (Manifest, ModelError, bind_dims, load_manifest,
                                        output_shapes, unknown_keys, weights_path)

# the memory a build's tensors live in (manifest "device", the backend's Backend.device) that
# this runtime can hand a library: host arrays, or CUDA device memory
DEVICES = ("host", "cuda", "hip")  # hip: PyTorch for ROCm's tensors (torch calls them cuda)


class CApi:
    """The generated C API of one library: <c_name>_{create,run,destroy,last_error,build_id},
    c_name being ait_<model> with '-' as '_'."""

    def __init__(self, lib_path: str, c_name: str):
        try:
            self.lib = _load_current(lib_path)
        except OSError as exc:
            raise ModelError(f"cannot load {lib_path}: {exc}") from None
        prefix = f"{c_name}_"
        try:
            self.create = self.lib[prefix + "create"]
            self.run = self.lib[prefix + "run"]
            self.destroy = self.lib[prefix + "destroy"]
            self.last_error = self.lib[prefix + "last_error"]
            self.build_id = self.lib[prefix + "build_id"]
        except AttributeError as exc:
            raise ModelError(f"{lib_path} lacks the C API {prefix}*: {exc}") from None
        self.build_id.argtypes = []
        self.build_id.restype = ctypes.c_char_p
        self.create.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        self.create.restype = ctypes.c_int
        self.run.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64),
                             ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p),
                             ctypes.c_void_p]
        self.run.restype = ctypes.c_int
        self.destroy.argtypes = [ctypes.c_void_p]
        self.destroy.restype = None
        self.last_error.argtypes = []
        self.last_error.restype = ctypes.c_char_p

    def error(self) -> str:
        """The library's message for the last failure on this thread."""
        text = self.last_error()
        return text.decode("utf-8", "replace") if text else "(no message)"


class Model:
    """A built model. `Model("build/cpu/mlp").run({"x": array}) -> {"softmax": array}`."""

    def __init__(self, build_dir: str, weights: str | None = None, device: int | None = None):
        """`device`: the GPU a cuda or rocm build runs on (None: the calling thread's current
        device, normally 0); host builds take None or 0 (devices.py)."""
        self.build_dir = os.path.abspath(_path(build_dir, "build_dir", "a build folder"))
        if os.path.isfile(self.build_dir):  # the library or another file of the build
            raise ModelError(f"{self.build_dir} is a file: give the build folder that holds its "
                             f"manifest.json (build/<target>/<model>), e.g. "
                             f"{os.path.dirname(self.build_dir)}")
        self.manifest: Manifest = load_manifest(os.path.join(self.build_dir, "manifest.json"))
        m = self.manifest
        if m.device not in DEVICES:
            raise ModelError(f"{m.name} was built for '{m.target}' ({m.backend}), whose tensors "
                             f"live in {m.device} memory; the Python runtime runs builds on "
                             f"{', '.join(DEVICES)} memory")
        self.device = devices.check_device_argument(device, m)
        self._devices = None  # what makes self.device current (None: nothing to switch)
        if self.device is not None and m.device != "host":
            self._devices = devices.device_control(m)
            devices.check_device_exists(self.device, self._devices, m)
        self.weights = os.path.abspath(_path(weights, "weights=", "a weights file")) \
            if weights is not None else weights_path(self.build_dir, m)
        identity.check_weights_file(self.weights, m, own=weights is None)
        library = os.path.join(self.build_dir, f"lib{m.name}.so")
        identity.check_library_file(library)
        identity.check_carried_libraries(self.build_dir, library)
        self._api = CApi(library, m.c_name)
        identity.check_library_build((self._api.build_id() or b"").decode("ascii", "replace"), m,
                                     library)
        handle = ctypes.c_void_p()
        with self._on_device():  # the model binds to the device current at create
            created = self._api.create(self.weights.encode(), ctypes.byref(handle))
            message = self._api.error() if created != 0 or not handle.value else ""
        if message:
            raise ModelError(f"{m.name}: cannot create the model from {self.weights}: {message}")
        self._handle = handle
        self._calls = 0
        self._closing = False
        self._idle = threading.Condition()

    # -- introspection -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def inputs(self) -> dict:
        return {t.name: t for t in self.manifest.inputs}

    @property
    def outputs(self) -> dict:
        return {t.name: t for t in self.manifest.outputs}

    # -- running -------------------------------------------------------------------------------
    def run(self, inputs: dict, dims: dict | None = None, outputs: dict | None = None) -> dict:
        """Outputs (name -> new array) for `inputs` (name -> array of the manifest's dtype).
        `dims` gives dim values the input shapes cannot tell. A cuda build takes NumPy arrays
        (copied to the device and back, no PyTorch needed), device arrays of any DLPack or
        __cuda_array_interface__ producer (read in place; outputs are DeviceArrays, which
        torch/cupy/jax take through DLPack without a copy) or torch CUDA tensors (no copies;
        enqueued on torch's current stream; outputs are torch tensors); `outputs` may hand it
        contiguous device arrays to write into, so that repeated calls reuse one set of
        pointers (and replay one CUDA graph)."""
        self._check_mapping(inputs, "inputs")
        if outputs is not None:
            self._check_mapping(outputs, "outputs=")
        torch_given = any(_is_torch(v) for v in list(inputs.values()) + list((outputs or {}).values()))
        if self.manifest.device == "cuda":
            if torch_given:
                return self._run_cuda(inputs, dims, outputs)
            return self._run_cuda_arrays(inputs, dims, outputs)
        if self.manifest.device == "hip":  # PyTorch for ROCm: HIP streams and memory as torch.cuda
            if not torch_given:
                raise ModelError(f"{self.name}: a {self.manifest.target} build runs on PyTorch "
                                 "(for ROCm) tensors on the GPU; NumPy and other arrays are not "
                                 "taken on HIP devices yet")
            return self._run_cuda(inputs, dims, outputs)
        if outputs is not None:
            raise ModelError(f"{self.name}: outputs= is for builds whose tensors live on a device")
        arrays = self._check_inputs(inputs)
        env = bind_dims(self.manifest, {k: a.shape for k, a in arrays.items()}, dims)
        shapes = output_shapes(self.manifest, env)
        outputs = {o.name: np.empty(shapes[o.name], dtype=NUMPY[o.dtype]) for o in self.manifest.outputs}
        dim_values = (ctypes.c_int64 * max(1, len(env)))(*[env[d] for d in self.manifest.dim_names])
        ins = _pointers([arrays[t.name] for t in self.manifest.inputs])
        outs = _pointers([outputs[t.name] for t in self.manifest.outputs])
        handle = self._enter()
        try:
            rc = self._api.run(handle, dim_values, ins, outs, None)
            message = self._api.error() if rc else ""
        finally:
            self._leave()
        if rc:
            raise ModelError(f"{self.name}: run failed (code {rc}): {message}")
        return outputs

    __call__ = run

    def _run_cuda(self, inputs: dict, dims: dict | None, given: dict | None) -> dict:
        import torch
        self._check_names(inputs)
        host = {k for k, v in inputs.items() if isinstance(v, np.ndarray)}
        on = torch.device("cuda", self.device) if self.device is not None else torch.device("cuda")
        tensors = {k: numpy_to_torch(v).to(on) if k in host else device_tensor(v, on)
                   for k, v in inputs.items()}
        for spec in self.manifest.inputs:
            t = tensors[spec.name]
            want = getattr(torch, spec.dtype)
            if not (isinstance(t, torch.Tensor) and t.is_cuda):
                raise ModelError(f"input '{spec.name}' must be a CUDA tensor (torch, or any object "
                                 "with __dlpack__ or __cuda_array_interface__) or a NumPy array of "
                                 f"{spec.dtype}, got {type(t).__name__}"
                                 f"{'' if not isinstance(t, torch.Tensor) else ' on ' + str(t.device)}")
            if t.dtype != want:
                raise ModelError(f"input '{spec.name}' is {t.dtype}; the model expects "
                                 f"{spec.dtype} (ait-build does not cast silently)")
            self._check_on_device(f"input '{spec.name}'", t.device.index or 0)
        tensors = {k: v.contiguous() for k, v in tensors.items()}
        env = bind_dims(self.manifest, {k: tuple(t.shape) for k, t in tensors.items()}, dims)
        shapes = output_shapes(self.manifest, env)
        device = next(iter(tensors.values())).device if tensors else on
        names = [o.name for o in self.manifest.outputs]
        if given is not None and sorted(given) != sorted(names):
            raise ModelError(f"{self.name}: outputs= must name {', '.join(names)}")
        outputs = {o.name: torch.empty(shapes[o.name], dtype=getattr(torch, o.dtype), device=device)
                   if given is None else given[o.name] for o in self.manifest.outputs}
        for o in self.manifest.outputs if given is not None else ():
            t = outputs[o.name]
            if (not t.is_cuda or t.dtype != getattr(torch, o.dtype) or not t.is_contiguous()
                    or tuple(t.shape) != tuple(shapes[o.name])):
                raise ModelError(f"output '{o.name}' must be a contiguous CUDA tensor of "
                                 f"{o.dtype} {list(shapes[o.name])}, got {t.dtype} "
                                 f"{list(t.shape)} on {t.device}")
            self._check_on_device(f"output '{o.name}'", t.device.index or 0)
        dim_values = (ctypes.c_int64 * max(1, len(env)))(*[env[d] for d in self.manifest.dim_names])
        ins = (ctypes.c_void_p * max(1, len(tensors)))(
            *[tensors[t.name].data_ptr() for t in self.manifest.inputs])
        outs = (ctypes.c_void_p * max(1, len(outputs)))(*[o.data_ptr() for o in outputs.values()])
        handle = self._enter()
        try:
            with torch.cuda.device(device):
                stream = torch.cuda.current_stream().cuda_stream
                rc = self._api.run(handle, dim_values, ins, outs, ctypes.c_void_p(stream))
            message = self._api.error() if rc else ""
        finally:
            self._leave()
        if rc:
            raise ModelError(f"{self.name}: run failed (code {rc}): {message}")
        if host and len(host) == len(inputs):
            return {k: torch_to_numpy(v) for k, v in outputs.items()}
        return outputs

    def _run_cuda_arrays(self, inputs: dict, dims: dict | None, given: dict | None) -> dict:
        """The cuda path without PyTorch: ait_build.runtime.cuda's ctypes CUDA runtime."""
        self._check_names(inputs)
        rt = cuda.runtime()
        with cuda.on_device(rt, self.device):  # copies and outputs in the model's device memory
            return self._run_on_device(rt, inputs, dims, given)

    def _run_on_device(self, rt, inputs: dict, dims: dict | None, given: dict | None) -> dict:
        arrays = {t.name: self._device_input(t, inputs[t.name], rt) for t in self.manifest.inputs}
        env = bind_dims(self.manifest, {k: a.shape for k, a in arrays.items()}, dims)
        shapes = output_shapes(self.manifest, env)
        names = [o.name for o in self.manifest.outputs]
        if given is not None and sorted(given) != sorted(names):
            raise ModelError(f"{self.name}: outputs= must name {', '.join(names)}")
        outputs = {}
        for o in self.manifest.outputs:
            if given is None:
                outputs[o.name] = cuda.DeviceArray.empty(rt, shapes[o.name], NUMPY[o.dtype],
                                                         self.device)
                continue
            out = self._device_input(o, given[o.name], rt, what="output")
            if tuple(out.shape) != tuple(shapes[o.name]) or isinstance(given[o.name], np.ndarray):
                raise ModelError(f"output '{o.name}' must be a device array of {o.dtype} "
                                 f"{list(shapes[o.name])}, got {list(out.shape)}")
            outputs[o.name] = out
        dim_values = (ctypes.c_int64 * max(1, len(env)))(*[env[d] for d in self.manifest.dim_names])
        ins = (ctypes.c_void_p * max(1, len(arrays)))(*[arrays[n].ptr for n in arrays])
        outs = (ctypes.c_void_p * max(1, len(outputs)))(*[outputs[n].ptr for n in names])
        handle = self._enter()
        try:
            rc = self._api.run(handle, dim_values, ins, outs, None)  # the device's legacy stream
            message = self._api.error() if rc else ""
            if not rc:
                rt.synchronize(0)
        finally:
            self._leave()
        if rc:
            raise ModelError(f"{self.name}: run failed (code {rc}): {message}")
        if given is not None:
            return dict(given)
        if all(isinstance(v, np.ndarray) for v in inputs.values()):
            return {k: rt.to_host(v) for k, v in outputs.items()}
        return outputs

    def _device_input(self, spec, value, rt, what: str = "input"):
        """A NumPy array copied to the device, or another library's device array read in place
        (a DeviceArray or ForeignArray: .ptr and .shape)."""
        if isinstance(value, np.ndarray):
            self._check_dtype(spec, value.dtype, what)
            return rt.to_device(value, self.device)
        if isinstance(value, cuda.DeviceArray):
            found = cuda.ForeignArray(value.ptr, value.shape, value.dtype, value.device, True, value)
        elif hasattr(value, "__dlpack__"):
            found = cuda.read_dlpack(value)
        elif hasattr(value, "__cuda_array_interface__"):
            found = cuda.read_cuda_array_interface(value)
            if self.device is not None:  # the interface does not say which device
                found.device = (cuda.DL_CUDA, rt.pointer_device(found.ptr))
        else:
            raise ModelError(f"{what} '{spec.name}' must be a NumPy array or a device array "
                             "(DLPack, __cuda_array_interface__ or a torch CUDA tensor) of "
                             f"{spec.dtype}, got {described(value)}")
        if found.device[0] not in (cuda.DL_CUDA, cuda.DL_CUDA_MANAGED):
            raise ModelError(f"{what} '{spec.name}' is in host memory (DLPack device type "
                             f"{found.device[0]}); pass a NumPy array or a CUDA device array")
        self._check_on_device(f"{what} '{spec.name}'", found.device[1])
        self._check_dtype(spec, found.dtype, what)
        if not found.contiguous:
            raise ModelError(f"{what} '{spec.name}' is not contiguous (row-major); make a "
                             "contiguous copy first (ait-build reads device arrays in place)")
        return found

    def _check_on_device(self, what: str, device: int) -> None:
        """Device memory of another device than the model's is refused, not copied."""
        mine = self.device if self.device is not None else 0
        if device != mine:
            raise ModelError(f"{what} is on GPU device {device}; the model runs on device {mine} "
                             f"(Model(..., device={mine})): move it there, or load the model with "
                             f"device={device}")

    def _on_device(self):
        """A block with the model's device current (nothing to switch: a no-op)."""
        return cuda.on_device(self._devices, self.device if self._devices else None)

    def _check_dtype(self, spec, dtype, what: str = "input") -> None:
        problem = dtype_mismatch(f"{what} '{spec.name}'", dtype, spec.dtype)
        if problem:
            raise ModelError(problem)

    def _check_mapping(self, value, what: str) -> None:
        if not isinstance(value, dict):
            raise ModelError(f"{self.name}.run takes {what} as a dict of name -> array, got "
                             f"{described(value)}")

    def _check_names(self, inputs: dict) -> None:
        expected = [t.name for t in self.manifest.inputs]
        missing = [n for n in expected if n not in inputs]
        extra = unknown_keys(inputs, expected)
        if missing or extra:
            parts = ([f"missing input(s) {', '.join(missing)}"] if missing else []) + \
                    ([f"unknown input(s) {', '.join(extra)}"] if extra else [])
            raise ModelError(f"{self.name}: {'; '.join(parts)}; the model takes {', '.join(expected)}")

    def _check_inputs(self, inputs: dict) -> dict:
        self._check_names(inputs)
        arrays = {}
        for spec in self.manifest.inputs:
            value = inputs[spec.name]
            if not isinstance(value, np.ndarray):
                raise ModelError(f"input '{spec.name}' must be a NumPy array of {spec.dtype}, got "
                                 f"{described(value)}")
            self._check_dtype(spec, value.dtype)
            arrays[spec.name] = np.asarray(value, order="C")  # (ascontiguousarray: 0-d -> 1-d)
        return arrays

    def _enter(self):
        with self._idle:
            if self._handle is None or self._closing:
                raise ModelError(f"{self.name}: the model is closed")
            self._calls += 1
            return self._handle

    def _leave(self) -> None:
        with self._idle:
            self._calls -= 1
            self._idle.notify_all()

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Refuses new calls, frees the model once the calls in flight return; later calls
        raise ModelError (so close() returns even while other threads keep calling run())."""
        idle = getattr(self, "_idle", None)
        if idle is None:
            return  # __init__ failed before the model existed
        with idle:
            self._closing = True
            while self._calls:
                idle.wait()
            handle, self._handle = self._handle, None
        if handle is not None:
            with self._on_device():
                self._api.destroy(handle)

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{t.shape_text()}" for t in self.manifest.inputs)
        return f"Model({self.name!r} for {self.manifest.target}; {ins})"


def described(value) -> str:
    """What a value the caller passed is, for a message: 'None', 'a list', 'a numpy.float32
    scalar' (a NumPy scalar is not an array, though its type name reads like a dtype)."""
    if value is None:
        return "None"
    kind = type(value)
    if isinstance(value, np.generic):
        return f"a numpy.{kind.__name__} scalar (wrap it with np.asarray)"
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    return ("an " if name[0] in "aeiou" else "a ") + name


def _path(value, what: str, kind: str) -> str:
    """A path argument as text: a str or an os.PathLike of one; anything else (None, bytes, a
    number) is a ModelError naming what was expected, not os.path's TypeError from inside."""
    path = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(path, str):
        raise ModelError(f"Model takes {what} as the path of {kind} (a str or os.PathLike), got "
                         f"{described(value)}")
    return path


def _is_torch(value) -> bool:
    """A torch tensor, told without importing torch."""
    return type(value).__module__.split(".")[0] == "torch"


def numpy_to_torch(array: np.ndarray):
    """A CPU torch tensor over `array` (copied to C order first if it is not contiguous), of the
    same dtype and shape. torch.from_numpy refuses ml_dtypes' bfloat16, so a bfloat16 array
    travels as its int16 bits, viewed back as torch.bfloat16: bit-exact (NaN payloads, infinities
    and -0 included) and without a copy."""
    import torch
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)  # (not for every array: it makes 0-d arrays 1-d)
    if array.dtype == NUMPY["bfloat16"]:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def device_tensor(value, device=None):
    """A torch tensor over `value` without copying: torch tensors as they are, then anything that
    speaks DLPack (CuPy, JAX, ...: torch.from_dlpack) or exports __cuda_array_interface__ (Numba,
    CuPy: torch.as_tensor on the GPU); anything else is returned unchanged for the caller's
    type check. NumPy arrays, which also speak DLPack, are the host path (numpy_to_torch).
    `device`: the torch device an __cuda_array_interface__ array is read on (it does not say)."""
    import torch
    if isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "__dlpack__"):
        return torch.from_dlpack(value)
    if hasattr(value, "__cuda_array_interface__"):
        return torch.as_tensor(value, device=device or "cuda")
    return value


def torch_to_numpy(tensor) -> np.ndarray:
    """A NumPy array of a torch tensor's values (copied to the host if it is on a device);
    a torch.bfloat16 tensor, which Tensor.numpy() refuses, comes back as an ml_dtypes.bfloat16
    array through its int16 bits (bit-exact)."""
    import torch
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).cpu().numpy().view(NUMPY["bfloat16"])
    return tensor.cpu().numpy()


# absolute library path -> (st_dev, st_ino) of the file this process loaded under that path
_LOADED_FILES: dict = {}
_LOAD_LOCK = threading.Lock()


def _load_current(lib_path: str) -> ctypes.CDLL:
    """The library as it is on disk now. Loaded under its own path, so that its `$ORIGIN` rpath
    finds the BLAS its build folder carries (and MKL, which finds its CPU kernels beside its own
    path when it first runs, finds them there). dlopen() hands back a library already loaded
    under the same path, so a model rebuilt while this process runs would run its old code; a
    rebuilt file is loaded through a link of a new name (the loader still shares a file it has
    loaded before), in a folder that also links the build folder's libraries and lasts as long
    as the process."""
    path = os.path.abspath(lib_path)
    stat = os.stat(path)
    identity_now = (stat.st_dev, stat.st_ino)
    with _LOAD_LOCK:
        if _LOADED_FILES.setdefault(path, identity_now) == identity_now:
            return ctypes.CDLL(path)
    folder = tempfile.mkdtemp(prefix="ait-build-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    home = os.path.dirname(path)
    for name in os.listdir(home):
        if ".so" in name and not name.endswith(".sha256"):
            os.symlink(os.path.join(home, name), os.path.join(folder, name))
    return ctypes.CDLL(os.path.join(folder, os.path.basename(path)))


def _pointers(arrays: list):
    return (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
