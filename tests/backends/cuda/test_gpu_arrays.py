"""On a GPU: the cuda runtime without PyTorch (NumPy in, NumPy out through the ctypes CUDA
runtime) and DLPack producers read without copies, their outputs taken back through DLPack
(tests/runtime/test_cuda_arrays.py checks the same paths without a GPU, on host memory)."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.runtime import cuda

from cuda_helpers import built, spec_path

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_numpy_arrays_without_torch(target):
    model, graph = built(spec_path("mlp"), target)
    inputs = random_inputs(graph, {"batch": 5}, seed=3)
    out = model.run(inputs)
    assert isinstance(out["softmax"], np.ndarray)
    np.testing.assert_allclose(out["softmax"], run_reference(graph, inputs)["softmax"],
                               rtol=1e-3, atol=1e-4)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the producer is torch")
def test_dlpack_producer_read_in_place_and_outputs_through_dlpack():
    import torch
    model, graph = built(spec_path("mlp"), "h200")
    inputs = random_inputs(graph, {"batch": 5}, seed=4)

    x = torch.from_numpy(inputs["x"]).cuda()
    # only DLPack, as a CuPy or JAX array has: not taken for a torch tensor
    producer = SimpleNamespace(__dlpack__=x.__dlpack__, __dlpack_device__=x.__dlpack_device__)
    out = model.run({"x": producer})
    assert isinstance(out["softmax"], cuda.DeviceArray)
    y = torch.from_dlpack(out["softmax"])
    assert y.data_ptr() == out["softmax"].ptr  # no copy on the way out
    np.testing.assert_allclose(y.cpu().numpy(), run_reference(graph, inputs)["softmax"],
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(out["softmax"].numpy(), y.cpu().numpy())
