"""Which GPU a model runs on: `Model(build_dir, device=N)`.

The generated C API binds a model to the calling thread's current device when it is created, and
each run() makes that device current for the call and restores the caller's after
(docs/runtime.md, C API). So the Python runtime makes device N current around create and destroy,
allocates the copies of NumPy inputs and the outputs there, and refuses device arrays that live
on another device. `device=None` leaves the current device alone, as before there was a choice.
"""

from __future__ import annotations

import os

from ait_build.runtime import cuda
from ait_build.runtime.manifest import Manifest, ModelError


class TorchDevices:
    """Device control through PyTorch, where there is no libcudart to load (and for ROCm builds,
    whose devices PyTorch calls cuda)."""

    def __init__(self, torch):
        self.torch = torch

    def device_count(self) -> int:
        return self.torch.cuda.device_count()

    def get_device(self) -> int:
        return self.torch.cuda.current_device()

    def set_device(self, device: int) -> None:
        self.torch.cuda.set_device(device)


def check_device_argument(device, manifest: Manifest) -> int | None:
    """`device` as Model takes it: None, or a device index; host builds take only 0."""
    if device is not None and (isinstance(device, bool) or not isinstance(device, int) or device < 0):
        raise ModelError(f"{manifest.name}: device= takes a GPU index (an int, 0 or more) or None, "
                         f"got {device!r}")
    if manifest.device == "host" and device not in (None, 0):
        raise ModelError(f"{manifest.name} was built for '{manifest.target}', which runs on the "
                         f"host (the cpu): device= takes None or 0, got {device}")
    return device


def device_control(manifest: Manifest):
    """What sets and counts devices for a build: the CUDA runtime (ctypes), else PyTorch; ROCm
    builds go through PyTorch only."""
    if manifest.device == "cuda":
        try:
            return cuda.runtime()
        except ModelError as no_runtime:
            torch = _torch()
            if torch is None:
                raise ModelError(f"{manifest.name}: device= needs the CUDA runtime or PyTorch to "
                                 f"choose the device; {no_runtime}") from None
            return TorchDevices(torch)
    torch = _torch()
    if torch is None:
        raise ModelError(f"{manifest.name}: device= on a {manifest.target} build needs PyTorch "
                         "(for ROCm) to choose the device")
    return TorchDevices(torch)


def check_device_exists(device: int, control, manifest: Manifest) -> None:
    count = control.device_count()
    if device < count:
        return
    visible = os.environ.get("CUDA_VISIBLE_DEVICES" if manifest.device == "cuda"
                             else "HIP_VISIBLE_DEVICES")
    note = f" (with {'CUDA' if manifest.device == 'cuda' else 'HIP'}_VISIBLE_DEVICES={visible})" \
        if visible is not None else ""
    has = (f"{count} device{'s' if count != 1 else ''} ({', '.join(map(str, range(count)))})"
           if count else "no device")
    raise ModelError(f"{manifest.name}: GPU device {device} does not exist: this process sees "
                     f"{has}{note}")


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch
