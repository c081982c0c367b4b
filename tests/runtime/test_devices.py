"""`Model(build_dir, device=N)` without a GPU: the argument's checks, host builds refusing a GPU
index, and the device bookkeeping of a cuda build on a two-device host-memory runtime (the toy
library stands in for the cuda build). tests/backends/cuda/test_gpu_devices.py runs it on GPUs."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ait_build.cli.main import main
from ait_build.runtime import Model, ModelError, cuda
from toylib import HostRuntime, build_toy, toy_expected


@pytest.fixture(scope="module")
def cuda_toy(toy_dir, tmp_path_factory) -> str:
    return build_toy(str(tmp_path_factory.mktemp("cuda_toy")), target="h200", backend="cuda",
                     device="cuda")


@pytest.fixture
def two_gpus(monkeypatch):
    rt = HostRuntime(devices=2)
    monkeypatch.setattr(cuda, "runtime", lambda: rt)
    monkeypatch.setitem(sys.modules, "torch", None)
    return rt


def _inputs() -> dict:
    return {"x": np.arange(12, dtype=np.float32).reshape(3, 4), "tokens": np.arange(6, dtype=np.int64)}


@pytest.mark.parametrize("device", [-1, 1.0, "cuda:1", True, [1]])
def test_device_must_be_an_index(toy_dir, device):
    with pytest.raises(ModelError, match=r"toy: device= takes a GPU index \(an int, 0 or more\) "
                                         r"or None, got "):
        Model(toy_dir, device=device)


def test_a_cpu_build_takes_device_none_or_0_only(toy_dir):
    for device in (None, 0):
        with Model(toy_dir, device=device) as model:
            out = model.run(_inputs())
            np.testing.assert_array_equal(out["y"], toy_expected(**_inputs())["y"])
    with pytest.raises(ModelError, match=r"toy was built for 'cpu', which runs on the host \(the "
                                         r"cpu\): device= takes None or 0, got 1"):
        Model(toy_dir, device=1)


def test_cli_run_passes_the_device(toy_dir, capsys):
    assert main(["run", toy_dir, "--random-input", "--device", "0"]) == 0
    capsys.readouterr()
    assert main(["run", toy_dir, "--random-input", "--device", "1"]) == 1
    assert "device= takes None or 0, got 1" in capsys.readouterr().err


def test_a_cuda_build_on_device_1_allocates_and_frees_there(cuda_toy, two_gpus):
    with Model(cuda_toy, device=1) as model:
        assert two_gpus.current == 0  # the caller's device, restored after create
        out = model.run(_inputs())
        assert two_gpus.current == 0
    for name, want in toy_expected(**_inputs()).items():
        np.testing.assert_array_equal(out[name], want)
    # two input copies and two outputs, each allocated and freed on device 1; synchronized there
    assert sorted(two_gpus.events) == [("free", 1)] * 4 + [("malloc", 1)] * 4 + [("synchronize", 1)]


def test_device_arrays_must_live_on_the_models_device(cuda_toy, two_gpus):
    x = _inputs()["x"]
    with cuda.on_device(two_gpus, 1):
        on_1 = cuda.DeviceArray.empty(two_gpus, x.shape, x.dtype, 1)
    on_0 = cuda.DeviceArray.empty(two_gpus, x.shape, x.dtype, 0)
    with Model(cuda_toy, device=1) as model:
        with pytest.raises(ModelError, match=r"input 'x' is on GPU device 0; the model runs on "
                                             r"device 1 \(Model\(..., device=1\)\): move it there, "
                                             r"or load the model with device=0"):
            model.run({"x": on_0, "tokens": _inputs()["tokens"]})
        out = model.run({"x": on_1, "tokens": _inputs()["tokens"]})
        assert out["y"].device == (cuda.DL_CUDA, 1)  # DLPack consumers see where it lives
    with Model(cuda_toy) as model:  # device=None: device arrays on device 0, as before
        with pytest.raises(ModelError, match=r"input 'x' is on GPU device 1; the model runs on device 0"):
            model.run({"x": on_1, "tokens": _inputs()["tokens"]})
    del on_0, on_1, out
    assert ("free on another device", 0) not in two_gpus.events and \
        ("free on another device", 1) not in two_gpus.events


def test_a_device_that_does_not_exist_is_named(cuda_toy, two_gpus, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(ModelError, match=r"toy: GPU device 2 does not exist: this process sees 2 "
                                         r"devices \(0, 1\)$"):
        Model(cuda_toy, device=2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    with pytest.raises(ModelError, match=r"sees 2 devices \(0, 1\) \(with CUDA_VISIBLE_DEVICES=3,5\)"):
        Model(cuda_toy, device=5)
    two_gpus.devices = 0
    with pytest.raises(ModelError, match=r"GPU device 0 does not exist: this process sees no device"):
        Model(cuda_toy, device=0)


def test_choosing_a_device_needs_a_runtime(cuda_toy, monkeypatch):
    def no_libcudart():
        raise ModelError("cuda builds need the CUDA runtime library (libcudart)")
    monkeypatch.setattr(cuda, "runtime", no_libcudart)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ModelError, match=r"toy: device= needs the CUDA runtime or PyTorch to "
                                         r"choose the device; cuda builds need"):
        Model(cuda_toy, device=0)
    Model(cuda_toy).close()  # device=None chooses nothing, so needs neither
