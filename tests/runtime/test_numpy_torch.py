"""The cuda runtime's NumPy <-> torch conversions (ait_build.runtime.model.numpy_to_torch and
torch_to_numpy), on CPU tensors: bfloat16 (ml_dtypes), which torch.from_numpy and Tensor.numpy()
refuse, goes through its int16 bits and must round-trip bit-exactly; the other dtypes behave as
torch.from_numpy / Tensor.numpy() do."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ait_build.runtime.model import numpy_to_torch, torch_to_numpy

torch = pytest.importorskip("torch")

BF16 = np.dtype(ml_dtypes.bfloat16)
# 0, -0, 1, -1.5, smallest subnormal, -largest finite, +-inf, quiet NaN, negative NaN, NaN with
# a payload, a signalling NaN pattern, 3.140625
SPECIAL_BITS = np.array([0x0000, 0x8000, 0x3F80, 0xBFC0, 0x0001, 0xFF7F, 0x7F80, 0xFF80,
                         0x7FC0, 0xFFC0, 0x7FC1, 0x7F81, 0x4049], dtype=np.uint16)


def _bf16(bits: np.ndarray) -> np.ndarray:
    return bits.view(BF16)


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(np.uint16)


def test_bfloat16_round_trip_is_bit_exact():
    array = _bf16(SPECIAL_BITS.copy())
    tensor = numpy_to_torch(array)
    assert tensor.dtype == torch.bfloat16 and tuple(tensor.shape) == array.shape
    np.testing.assert_array_equal(tensor.view(torch.int16).numpy().view(np.uint16), SPECIAL_BITS)
    back = torch_to_numpy(tensor)
    assert back.dtype == BF16 and back.shape == array.shape
    np.testing.assert_array_equal(_bits(back), SPECIAL_BITS)


def test_bfloat16_values_agree_with_torch():
    """torch reads the same numbers: -0 keeps its sign, infinities and NaNs stay what they are."""
    array = _bf16(SPECIAL_BITS.copy())
    as_float = numpy_to_torch(array).float().numpy()
    np.testing.assert_array_equal(as_float, array.astype(np.float32))  # NaNs compare equal here
    assert np.signbit(as_float[1]) and as_float[1] == 0
    assert np.isposinf(as_float[6]) and np.isneginf(as_float[7])
    assert np.isnan(as_float[8:12]).all()


def test_bfloat16_tensor_from_torch_comes_back_as_ml_dtypes():
    values = [1.5, -0.0, float("inf"), float("-inf"), float("nan"), -3.0e38, 1e-40]
    tensor = torch.tensor(values, dtype=torch.bfloat16)
    out = torch_to_numpy(tensor)
    assert out.dtype == BF16
    np.testing.assert_array_equal(_bits(out), tensor.view(torch.int16).numpy().view(np.uint16))
    np.testing.assert_array_equal(out.astype(np.float32), tensor.float().numpy())
    assert np.signbit(out[1].astype(np.float32))


def test_bfloat16_contiguous_array_is_not_copied():
    array = _bf16(np.arange(12, dtype=np.uint16).reshape(3, 4))
    tensor = numpy_to_torch(array)
    assert tensor.data_ptr() == array.ctypes.data
    assert tuple(tensor.shape) == (3, 4) and tensor.is_contiguous()


def test_bfloat16_non_contiguous_both_ways():
    rng = np.random.default_rng(0)
    full = rng.standard_normal((4, 6)).astype(BF16)
    strided = full[:, ::2].T  # (3, 4), neither C- nor F-contiguous
    tensor = numpy_to_torch(strided)
    assert tensor.is_contiguous() and tuple(tensor.shape) == (3, 4)
    np.testing.assert_array_equal(_bits(torch_to_numpy(tensor)), _bits(np.ascontiguousarray(strided)))
    # a strided torch tensor (a transpose) comes back with the same values
    t = numpy_to_torch(full).T
    out = torch_to_numpy(t)
    assert out.dtype == BF16 and out.shape == (6, 4)
    np.testing.assert_array_equal(_bits(out), _bits(full.T))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.bool_, np.int32, np.int64, BF16])
def test_zero_dim_arrays_keep_their_shape(dtype):
    array = np.zeros((), dtype)
    tensor = numpy_to_torch(array)
    assert tuple(tensor.shape) == () and torch_to_numpy(tensor).shape == ()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, np.int64, np.bool_])
def test_other_dtypes_as_torch_does(dtype):
    rng = np.random.default_rng(1)
    array = (rng.standard_normal((2, 5)) * 100).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        array.flat[:4] = [np.inf, -np.inf, np.nan, -0.0]
    tensor = numpy_to_torch(array)
    want = torch.from_numpy(array)
    assert tensor.dtype == want.dtype and tensor.shape == want.shape
    assert tensor.data_ptr() == array.ctypes.data  # no copy, as torch.from_numpy
    back = torch_to_numpy(tensor)
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back.view(np.uint8), array.view(np.uint8))  # bit-exact
    np.testing.assert_array_equal(torch_to_numpy(tensor), tensor.numpy())
    # a non-contiguous array is copied to C order, values unchanged
    strided = array[:, ::2]
    np.testing.assert_array_equal(torch_to_numpy(numpy_to_torch(strided)), strided)
