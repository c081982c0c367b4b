"""How the cuda runtime takes inputs that are not torch tensors (ait_build.runtime.model.
device_tensor): DLPack producers through torch.from_dlpack and __cuda_array_interface__
exporters through torch.as_tensor on the GPU, both without copying. Checked on CPU memory here
(the GPU tests run the same path on the device); the CUDA check after it is Model.run's."""

from __future__ import annotations

import numpy as np
import pytest

from ait_build.runtime.model import device_tensor

torch = pytest.importorskip("torch")


class DlpackOnly:
    """A foreign array that only speaks DLPack (as CuPy or JAX arrays do)."""

    def __init__(self, tensor):
        self._tensor = tensor

    def __dlpack__(self, **kwargs):
        return self._tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()


def test_torch_tensors_pass_through():
    t = torch.arange(6, dtype=torch.float16)
    assert device_tensor(t) is t


def test_dlpack_producers_are_wrapped_without_a_copy():
    t = torch.arange(12, dtype=torch.float16).reshape(3, 4)
    got = device_tensor(DlpackOnly(t))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float16 and got.shape == (3, 4)
    assert got.data_ptr() == t.data_ptr()  # shares memory
    t[0, 0] = 7
    assert got[0, 0] == 7


def test_cuda_array_interface_goes_to_the_gpu_constructor(monkeypatch):
    seen = {}

    def as_tensor(value, device=None):
        seen.update(value=value, device=device)
        return "tensor"

    class Exporter:
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f2", "data": (0, False),
                                    "version": 3}

    monkeypatch.setattr(torch, "as_tensor", as_tensor)
    exporter = Exporter()
    assert device_tensor(exporter) == "tensor"
    assert seen == {"value": exporter, "device": "cuda"}


def test_other_values_are_left_for_the_type_check():
    assert device_tensor([1, 2]) == [1, 2]
    assert device_tensor(None) is None
    # NumPy arrays speak DLPack too, but Model.run sends them down the host path first
    array = np.zeros(3, np.float32)
    assert isinstance(device_tensor(array), torch.Tensor)
