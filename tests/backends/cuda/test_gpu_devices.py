"""On GPUs: `Model(build_dir, device=N)`. One GPU: device=0 runs, the first index past the
machine's devices is a clear error. Two GPUs: a model on device 1 takes NumPy arrays, DLPack
producers and torch tensors there, refuses tensors of device 0, leaves the caller's current
device alone, and runs beside a model on device 0 (tests/runtime/test_devices.py checks the
bookkeeping without a GPU)."""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.runtime import Model, ModelError, cuda

from cuda_helpers import built, spec_path

pytestmark = pytest.mark.gpu
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="the device tensors come from torch")


def device_count() -> int:
    try:
        return cuda.runtime().device_count()
    except ModelError:
        return 0


@pytest.fixture
def two_gpus():
    count = device_count()
    if count < 2:
        pytest.skip(f"needs two GPUs (this machine has {count})")


def mlp():
    """The h200 build of specs/mlp.yaml (its folder), its graph, inputs and reference outputs."""
    model, graph = built(spec_path("mlp"), "h200")
    inputs = random_inputs(graph, {"batch": 5}, seed=11)
    return model.build_dir, inputs, run_reference(graph, inputs)["softmax"]


def close(got, want) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_device_0_runs_and_a_missing_device_is_named():
    build_dir, inputs, want = mlp()
    count = cuda.runtime().device_count()
    assert count >= 1
    with Model(build_dir, device=0) as model:
        close(model.run(inputs)["softmax"], want)
    with pytest.raises(ModelError, match=rf"GPU device {count} does not exist: this process sees "
                                         rf"{count} device"):
        Model(build_dir, device=count)
    assert cuda.runtime().get_device() == 0


def test_numpy_and_dlpack_on_device_1(two_gpus):
    build_dir, inputs, want = mlp()
    rt = cuda.runtime()
    with Model(build_dir, device=1) as model:
        assert rt.get_device() == 0
        close(model.run(inputs)["softmax"], want)
        assert rt.get_device() == 0
        with cuda.on_device(rt, 1):
            x = rt.to_device(inputs["x"], 1)
        out = model.run({"x": x})["softmax"]  # a DeviceArray on device 1
        assert out.device == (cuda.DL_CUDA, 1) and rt.pointer_device(out.ptr) == 1
        close(out.numpy(), want)
        with pytest.raises(ModelError, match=r"input 'x' is on GPU device 0; the model runs on device 1"):
            model.run({"x": rt.to_device(inputs["x"])})  # device 0's memory
    del out, x  # freed on device 1 while device 0 is current


@needs_torch
def test_torch_tensors_on_device_1(two_gpus):
    import torch
    build_dir, inputs, want = mlp()
    with Model(build_dir, device=1) as model:
        x1 = torch.from_numpy(inputs["x"]).to("cuda:1")
        out = model.run({"x": x1})["softmax"]
        assert out.device == torch.device("cuda", 1)
        close(out.cpu().numpy(), want)
        producer = SimpleNamespace(__dlpack__=x1.__dlpack__, __dlpack_device__=x1.__dlpack_device__)
        close(model.run({"x": producer})["softmax"].numpy(), want)
        with pytest.raises(ModelError, match=r"input 'x' is on GPU device 0; the model runs on device 1"):
            model.run({"x": x1.to("cuda:0")})
    assert torch.cuda.current_device() == 0


def test_two_devices_run_side_by_side(two_gpus):
    build_dir, inputs, want = mlp()
    models = [Model(build_dir, device=d) for d in (0, 1)]
    try:
        with ThreadPoolExecutor(4) as pool:
            outs = list(pool.map(lambda i: models[i % 2].run(inputs)["softmax"], range(16)))
    finally:
        for model in models:
            model.close()
    for out in outs:
        close(out, want)
    np.testing.assert_array_equal(outs[0], outs[1])  # the same kernels on the same kind of GPU
