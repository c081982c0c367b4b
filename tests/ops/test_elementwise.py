"""Elementwise ops: activations, broadcasting arithmetic, cast."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .helpers import out_types, rand, run1, spec_error

F32 = np.float32
# float32 torch vs our float64-then-rounded activations: both are within a few ulps of the exact
# value, so 1e-6 relative (8 ulps) plus 1e-7 absolute for results near zero
ACT_TOL = dict(rtol=1e-6, atol=1e-7)


def v(*values, dtype=F32):
    return np.array(values, dtype=dtype)


# -- hand-computed values -----------------------------------------------------------------------

@pytest.mark.parametrize("op, x, expected", [
    ("relu", v(-2, -0.5, 0, 3), v(0, 0, 0, 3)),
    ("sigmoid", v(0, -100, 100, math.log(3)), v(0.5, 0, 1, 0.75)),
    ("tanh", v(0, 1, -1), v(0, 0.7615941559557649, -0.7615941559557649)),
    # silu(x) = x * sigmoid(x); sigmoid(ln 3) = 3/4
    ("silu", v(0, math.log(3), -100), v(0, 0.75 * math.log(3), 0)),
    # hardswish: 0 below -3, x above 3, x(x+3)/6 between
    ("hardswish", v(-4, -3, 0, 1, 3, 4), v(0, 0, 0, 4 / 6, 3, 4)),
    ("identity", v(1.5, -2), v(1.5, -2)),
])
def test_activation_values(tmp_path, op, x, expected):
    np.testing.assert_allclose(run1(tmp_path, op, {"x": x}), expected, rtol=1e-6, atol=1e-30)


def test_gelu_erf_and_tanh_forms(tmp_path):
    x = v(-1, 0, 1, 2)
    # 0.5 x (1 + erf(x / sqrt 2)) = x * Phi(x); Phi(1) = 0.8413447460685429, Phi(2) = 0.9772498680518208
    erf = [-0.15865525393145707, 0.0, 0.8413447460685429, 2 * 0.9772498680518208]
    tanh = [0.5 * t * (1 + math.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3))) for t in x]
    got_erf = run1(tmp_path, "gelu", {"x": x})
    got_tanh = run1(tmp_path, "gelu", {"x": x}, approximate="tanh")
    np.testing.assert_allclose(got_erf, erf, rtol=1e-7)
    np.testing.assert_allclose(got_tanh, tanh, rtol=1e-7)
    # the forms really differ (by ~1.5e-4 at x = 1): the attribute is not ignored
    assert abs(float(got_erf[2]) - float(got_tanh[2])) > 1e-4


def test_relu_keeps_int_dtype(tmp_path):
    out = run1(tmp_path, "relu", {"x": v(-3, 4, dtype=np.int32)})
    assert out.dtype == np.int32 and out.tolist() == [0, 4]


def test_broadcasting_add(tmp_path):
    a = v(10, 20).reshape(2, 1)
    b = v(1, 2, 3)
    assert out_types(tmp_path, "add", {"a": [2, 1], "b": [3]}) == [([2, 3], "float32")]
    np.testing.assert_array_equal(run1(tmp_path, "add", {"a": a, "b": b}),
                                  [[11, 12, 13], [21, 22, 23]])


@pytest.mark.parametrize("op, expected", [("add", [5, 2]), ("sub", [-1, -6]), ("mul", [6, -8]),
                                          ("div", [2 / 3, -0.5])])
def test_binary_values(tmp_path, op, expected):
    got = run1(tmp_path, op, {"a": v(2, -2), "b": v(3, 4)})
    np.testing.assert_allclose(got, expected, rtol=1e-7)


@pytest.mark.parametrize("op, expected", [("add", [4, 0]), ("sub", [0, -4]), ("mul", [4, -4]),
                                          ("div", [1, -1])])
def test_binary_scalar_is_the_second_operand(tmp_path, op, expected):
    np.testing.assert_allclose(run1(tmp_path, op, {"a": v(2, -2)}, scalar=2), expected)


def test_int_arithmetic_stays_int(tmp_path):
    a, b = v(7, -7, dtype=np.int32), v(2, 2, dtype=np.int32)
    out = run1(tmp_path, "mul", {"a": a, "b": b})
    assert out.dtype == np.int32 and out.tolist() == [14, -14]
    assert run1(tmp_path, "add", {"a": a}, scalar=3).tolist() == [10, -4]


@pytest.mark.parametrize("dtype, x, expected", [
    ("int32", [-1.7, 1.7, 2.5], [-1, 1, 2]),  # truncation toward zero, as tensor.to(int)
    ("float16", [1 / 3], [0.333251953125]),  # rounded to the nearest float16
    ("bfloat16", [1 / 3], [0.333984375]),
    ("bool", [0.0, 2.5, -1.0], [False, True, True]),
])
def test_cast(tmp_path, dtype, x, expected):
    out = run1(tmp_path, "cast", {"x": np.array(x, F32)}, dtype=dtype)
    assert out.tolist() == expected
    assert out_types(tmp_path, "cast", {"x": [3]}, dtype=dtype)[0][1] == dtype


# -- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, inputs, attrs, match", [
    ("add", {"a": [2, 3], "b": [4]}, {}, r"shapes \[2, 3\] and \[4\] do not broadcast"),
    ("add", {"a": [2], "b": [2]}, {"scalar": 1}, "with 'scalar', give exactly one input"),
    ("sub", {"a": [2]}, {}, "expects 2 inputs"),
    ("mul", {"a": [2], "b": ([2], "int32")}, {}, "different dtypes: float32, int32"),
    ("div", {"a": ([2], "int32"), "b": ([2], "int32")}, {}, "div input must be a float tensor"),
    ("add", {"a": ([2], "int64")}, {"scalar": 0.5}, "scalar 0.5 is not an integer"),
    ("add", {"a": ([2], "bool"), "b": ([2], "bool")}, {}, "bool tensors"),
    ("sigmoid", {"x": ([2], "int32")}, {}, "must be a float tensor, got int32"),
    ("relu", {"x": ([2], "bool")}, {}, "must be numeric"),
    ("gelu", {"x": [2]}, {"approximate": "fast"}, "must be one of none, tanh"),
    ("cast", {"x": [2]}, {"dtype": "float64"}, "must be one of"),
])
def test_errors(tmp_path, op, inputs, attrs, match):
    spec_error(tmp_path, op, inputs, match, **attrs)


# -- properties ---------------------------------------------------------------------------------

@st.composite
def broadcastable(draw):
    """Two shapes that broadcast: suffixes of one shape with some dims replaced by 1."""
    full = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))

    def operand():
        rank = draw(st.integers(1, len(full)))
        return [draw(st.sampled_from([1, d])) for d in full[len(full) - rank:]]
    return operand(), operand()


@settings(max_examples=30, deadline=None)
@given(pair=broadcastable())
def test_broadcast_inference_matches_numpy(tmp_path_factory, pair):
    a, b = pair
    tmp = tmp_path_factory.mktemp("bc")
    assert out_types(tmp, "add", {"a": a, "b": b})[0][0] == list(np.broadcast_shapes(a, b))


# -- against PyTorch ----------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("op, attrs, fn", [
    ("relu", {}, "relu"), ("silu", {}, "silu"), ("sigmoid", {}, "sigmoid"), ("tanh", {}, "tanh"),
    ("hardswish", {}, "hardswish"), ("gelu", {}, "gelu"), ("gelu", {"approximate": "tanh"}, "gelu"),
])
def test_activations_vs_torch(tmp_path, op, attrs, fn):
    torch = pytest.importorskip("torch")
    x = np.concatenate([rand(500) * 4, v(-30, -9, -3, -1e-3, 0, 1e-3, 3, 9, 30)])
    f = getattr(torch.nn.functional, fn)
    kw = {"approximate": "tanh"} if attrs else {}
    got = run1(tmp_path, op, {"x": x}, **attrs)
    # against torch in float64, relative: the reference uses forms that do not cancel, so it is
    # within a few float32 ulps everywhere (1e-14 absolute: torch's float64 gelu cancels for x < 0)
    exact = f(torch.from_numpy(x).double(), **kw).numpy()
    np.testing.assert_allclose(got, exact, rtol=1e-6, atol=1e-14)
    # against torch's float32 kernels: gelu's 1 + erf(..) and 1 + tanh(..) cancel in float32 for
    # x < 0, giving absolute errors up to ~3e-7 there; elsewhere a few ulps
    expected = f(torch.from_numpy(x), **kw).numpy()
    np.testing.assert_allclose(got, expected, **(dict(rtol=1e-6, atol=1e-6) if op == "gelu"
                                                   else ACT_TOL))


@pytest.mark.torch
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_vs_torch(tmp_path, op):
    torch = pytest.importorskip("torch")
    a, b = rand(2, 1, 4, seed=1), rand(3, 1, seed=2) + 3  # b away from 0 for div
    expected = getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    # one float32 operation on both sides, correctly rounded: bit-exact
    np.testing.assert_array_equal(run1(tmp_path, op, {"a": a, "b": b}), expected)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "int64", "bool"])
def test_cast_vs_torch(tmp_path, dtype):
    torch = pytest.importorskip("torch")
    x = np.concatenate([rand(300) * 100, v(0, -0.5, 0.5, -1.5, 2.5, 65504, 1e-8)])
    ref = torch.from_numpy(x).to(getattr(torch, dtype))
    ref = ref.float().numpy() if ref.is_floating_point() else ref.numpy()
    # rounding to nearest even (floats) and truncation toward zero (ints) on both sides: exact
    np.testing.assert_array_equal(run1(tmp_path, "cast", {"x": x}, dtype=dtype), ref)


# -- clamps and minimum/maximum -----------------------------------------------------------------

@pytest.mark.parametrize("op, attrs, expected", [
    ("clamp", dict(min=-1, max=2), v(-1, -0.5, 1.5, 2, np.nan)),
    ("clamp", dict(min=0), v(0, 0, 1.5, 7, np.nan)),
    ("clamp", dict(max=0.5), v(-3, -0.5, 0.5, 0.5, np.nan)),
    ("clamp", dict(min=3, max=1), v(1, 1, 1, 1, np.nan)),  # min > max gives max, as in PyTorch
    ("relu6", {}, v(0, 0, 1.5, 6, np.nan)),
    ("hardtanh", {}, v(-1, -0.5, 1, 1, np.nan)),
    ("hardtanh", dict(min_val=-2.0, max_val=3.0), v(-2, -0.5, 1.5, 3, np.nan)),
])
def test_clamp_family_values_keep_nan(tmp_path, op, attrs, expected):
    out = run1(tmp_path, op, {"x": v(-3, -0.5, 1.5, 7, np.nan)}, **attrs)
    np.testing.assert_array_equal(out, expected)


def test_clamp_on_ints_and_its_rules(tmp_path):
    out = run1(tmp_path, "clamp", {"x": v(-5, 0, 9, dtype=np.int64)}, min=-1, max=4)
    assert out.dtype == np.int64 and out.tolist() == [-1, 0, 4]
    spec_error(tmp_path, "clamp", {"x": [3]}, "needs 'min', 'max' or both")
    spec_error(tmp_path, "clamp", {"x": ([3], "int32")}, "not an integer", min=0.5)
    spec_error(tmp_path, "relu6", {"x": ([3], "int32")}, "float tensor")


def test_minimum_maximum_broadcast_and_nan_wins(tmp_path):
    a = v(1, 5, np.nan, 2).reshape(4, 1)
    b = v(3, np.nan)
    lo = run1(tmp_path, "minimum", {"a": a, "b": b})
    hi = run1(tmp_path, "maximum", {"a": a, "b": b})
    np.testing.assert_array_equal(lo, [[1, np.nan], [3, np.nan], [np.nan, np.nan], [2, np.nan]])
    np.testing.assert_array_equal(hi, [[3, np.nan], [5, np.nan], [np.nan, np.nan], [3, np.nan]])
    np.testing.assert_array_equal(run1(tmp_path, "maximum", {"a": v(-1, 2)}, scalar=0), [0, 2])


def test_clamps_vs_torch(tmp_path):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal(64).astype(F32) * 5
    t = torch.from_numpy(x)
    cases = [("relu6", {}, torch.nn.functional.relu6(t)),
             ("hardtanh", dict(min_val=-0.3, max_val=0.8), torch.nn.functional.hardtanh(t, -0.3, 0.8)),
             ("clamp", dict(min=-2.5), torch.clamp(t, min=-2.5))]
    for op, attrs, want in cases:
        np.testing.assert_array_equal(run1(tmp_path, op, {"x": x}, **attrs), want.numpy(), err_msg=op)


def test_sqrt_exp_erf_values(tmp_path):
    np.testing.assert_array_equal(run1(tmp_path, "sqrt", {"x": v(4, 2.25, 0)}), [2, 1.5, 0])
    assert np.isnan(run1(tmp_path, "sqrt", {"x": v(-1)}))[0]
    np.testing.assert_allclose(run1(tmp_path, "exp", {"x": v(0, 1, -1)}),
                               [1, math.e, 1 / math.e], rtol=1e-7)
    x = v(-2, -0.5, 0, 0.3, 3)
    np.testing.assert_array_equal(run1(tmp_path, "erf", {"x": x}),
                                  np.array([math.erf(t) for t in x.astype(np.float64)], F32))
    spec_error(tmp_path, "erf", {"x": ([3], "int64")}, "float tensor")


def test_rounding_and_accurate_forms_match_torch(tmp_path):
    """floor, round (halves to even), trunc, expm1, log1p, tan, atan as PyTorch computes them."""
    torch = pytest.importorskip("torch")
    x = v(-2.5, -1.5, -0.5, -0.2, 0, 1e-8, 0.5, 1.5, 2.5, 2.7, -3.7)
    for op in ("floor", "round", "trunc", "expm1", "tan", "atan"):
        want = getattr(torch, op)(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(run1(tmp_path, op, {"x": x}), want, rtol=1e-6, err_msg=op)
    pos = np.abs(x)
    np.testing.assert_allclose(run1(tmp_path, "log1p", {"x": pos}),
                               torch.log1p(torch.from_numpy(pos)).numpy(), rtol=1e-6)
    assert run1(tmp_path, "expm1", {"x": v(1e-8)})[0] == np.float32(1e-8)  # not exp(x) - 1 = 0
    spec_error(tmp_path, "floor", {"x": ([3], "int64")}, "float tensor")


def test_floor_divide_and_remainder_as_python(tmp_path):
    """Python's // and %: the quotient rounded down, the remainder with the divisor's sign; an
    int divisor of 0 gives 0 (the kernels cannot trap), the lowest int over -1 wraps."""
    a = np.array([7, -7, 7, -7, 0, 5, -2**31], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, -1], np.int32)
    np.testing.assert_array_equal(run1(tmp_path, "floor_divide", {"a": a, "b": b}),
                                  [3, -4, -4, 3, 0, 0, -2**31])
    np.testing.assert_array_equal(run1(tmp_path, "remainder", {"a": a, "b": b}),
                                  [1, 1, -1, -1, 0, 0, 0])
    x = v(7.5, -7.5, 2.0, -0.25)
    np.testing.assert_array_equal(run1(tmp_path, "remainder", {"a": x}, scalar=2.0),
                                  np.remainder(x, np.float32(2.0)))
    np.testing.assert_array_equal(run1(tmp_path, "floor_divide", {"a": x}, scalar=-2.0),
                                  np.floor_divide(x, np.float32(-2.0)))


def test_leaky_relu_values(tmp_path):
    x = v(-2, -0.5, 0, 3, float("nan"))
    got = run1(tmp_path, "leaky_relu", {"x": x}, negative_slope=0.1)
    np.testing.assert_allclose(got[:4], [-0.2, -0.05, 0, 3], rtol=1e-7)
    assert np.isnan(got[4])
    spec_error(tmp_path, "leaky_relu", {"x": ([3], "int64")}, "float tensor")


def test_rotary_and_bucket_math_match_torch(tmp_path):
    """sin, cos, log, ceil (float only) and abs, sign (ints too) as PyTorch computes them."""
    torch = pytest.importorskip("torch")
    x = v(-2.5, -1, -0.0, 0, 0.3, 1.5, 7)
    t = torch.from_numpy(x)
    for op, fn in (("sin", torch.sin), ("cos", torch.cos), ("ceil", torch.ceil),
                   ("abs", torch.abs), ("sign", torch.sign)):
        np.testing.assert_allclose(run1(tmp_path, op, {"x": x}), fn(t).numpy(), **ACT_TOL,
                                   err_msg=op)
    pos = v(0.5, 1, 3, 100)
    np.testing.assert_allclose(run1(tmp_path, "log", {"x": pos}),
                               torch.log(torch.from_numpy(pos)).numpy(), **ACT_TOL)
    assert np.isnan(run1(tmp_path, "sign", {"x": v(np.nan)}))[0]
    ints = v(-3, 0, 2, dtype=np.int64)
    np.testing.assert_array_equal(run1(tmp_path, "abs", {"x": ints}), [3, 0, 2])
    np.testing.assert_array_equal(run1(tmp_path, "sign", {"x": ints}), [-1, 0, 1])
    spec_error(tmp_path, "log", {"x": ([3], "int64")}, "float tensor")
    spec_error(tmp_path, "abs", {"x": ([3], "bool")}, "numeric")
