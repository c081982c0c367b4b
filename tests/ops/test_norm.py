"""batch_norm (inference, channels last), layer_norm and rms_norm (with the fused residual),
softmax."""

import math

import numpy as np
import pytest

from .helpers import rand, run1, spec_error, weights_of

F32 = np.float32


def v(*values):
    return np.array(values, F32)


def test_batch_norm_values(tmp_path):
    ws = {"weight": v(2, 1), "bias": v(0, 1), "running_mean": v(1, 0), "running_var": v(4, 1)}
    # channel 0: (x - 1) / 2 * 2; channel 1: x / 1 + 1
    out = run1(tmp_path, "batch_norm", {"x": v(1, 2, 3, -1).reshape(2, 2)}, weights=ws, eps=0.0)
    np.testing.assert_array_equal(out, [[0, 3], [2, 0]])


def test_batch_norm_weight_names(tmp_path):
    assert weights_of(tmp_path, "batch_norm", {"x": [1, 4, 4, 8]}) == {
        role: (f"n.{role}", [8]) for role in ("weight", "bias", "running_mean", "running_var")}


def test_layer_norm_values(tmp_path):
    ws = {"weight": v(1, 1, 1, 2), "bias": v(0, 0, 0, 1)}
    out = run1(tmp_path, "layer_norm", {"x": v(1, 2, 3, 4)}, weights=ws, eps=0.0)
    z = (np.array([1, 2, 3, 4]) - 2.5) / math.sqrt(1.25)  # biased variance, as PyTorch
    np.testing.assert_allclose(out, z * [1, 1, 1, 2] + [0, 0, 0, 1], rtol=1e-6)


def test_layer_norm_normalizes_x_plus_residual(tmp_path):
    ws = {"weight": v(1, 1, 1), "bias": v(5, 6, 7)}
    # x + residual is constant, so it normalizes to 0 and the output is the bias
    out = run1(tmp_path, "layer_norm", {"x": v(1, 2, 3), "r": v(3, 2, 1)}, weights=ws)
    np.testing.assert_allclose(out, [5, 6, 7], atol=1e-6)
    # and the residual really is added: x alone normalizes to [-1.22, 0, 1.22]
    out = run1(tmp_path, "layer_norm", {"x": v(1, 2, 3), "r": v(0, 0, 0)}, weights=ws, eps=0.0)
    np.testing.assert_allclose(out, [5 - math.sqrt(1.5), 6, 7 + math.sqrt(1.5)], rtol=1e-6)


def test_rms_norm_values(tmp_path):
    # no centering: [3, 4] has a mean square of 12.5, so it scales by 1 / sqrt(12.5)
    out = run1(tmp_path, "rms_norm", {"x": v(3, 4)}, weights={"weight": v(1, 2)}, eps=0.0)
    np.testing.assert_allclose(out, np.array([3, 8]) / math.sqrt(12.5), rtol=1e-6)
    out = run1(tmp_path, "rms_norm", {"x": v(1, 2), "r": v(2, 2)}, weights={"weight": v(1, 1)},
               eps=0.0)
    np.testing.assert_allclose(out, np.array([3, 4]) / math.sqrt(12.5), rtol=1e-6)


def test_rms_norm_weight_and_eps(tmp_path):
    assert weights_of(tmp_path, "rms_norm", {"x": [2, 6]}) == {"weight": ("n.weight", [6])}
    assert weights_of(tmp_path, "rms_norm", {"x": [2, 6]}, affine=False) == {}
    # eps 1e-6 by default (T5's): a zero row stays zero, not NaN
    out = run1(tmp_path, "rms_norm", {"x": v(0, 0)}, affine=False)
    np.testing.assert_array_equal(out, [0, 0])


def test_layer_norm_without_affine_has_no_weights(tmp_path):
    assert weights_of(tmp_path, "layer_norm", {"x": [2, 4]}, affine=False) == {}
    out = run1(tmp_path, "layer_norm", {"x": v(0, 2)}, affine=False, eps=0.0)
    np.testing.assert_array_equal(out, [-1, 1])


def test_softmax_values(tmp_path):
    out = run1(tmp_path, "softmax", {"x": v(0, math.log(2), math.log(3))})
    np.testing.assert_allclose(out, [1 / 6, 2 / 6, 3 / 6], rtol=1e-6)
    # large logits do not overflow: the max is subtracted first
    np.testing.assert_array_equal(run1(tmp_path, "softmax", {"x": v(1000, 1000)}), [0.5, 0.5])


def test_softmax_rows_sum_to_one_along_axis(tmp_path):
    x = rand(3, 4, 5) * 10
    for axis in (0, 1, -1):
        out = run1(tmp_path, "softmax", {"x": x}, axis=axis)
        np.testing.assert_allclose(out.sum(axis=axis), 1.0, rtol=1e-6)
        assert (out > 0).all()


# -- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, inputs, attrs, match", [
    ("batch_norm", {"x": [4]}, {}, r"rank >= 2, got \[4\]"),
    ("batch_norm", {"x": [2, "c"]}, {}, "channels .* must be static"),
    ("batch_norm", {"x": ([2, 4], "int32")}, {}, "float tensor"),
    ("layer_norm", {"x": [2, 4], "r": [1, 4]}, {}, r"residual \[1, 4\] differs from input \[2, 4\]"),
    ("layer_norm", {"x": [2, 4], "r": ([2, 4], "float16")}, {}, "different dtypes"),
    ("layer_norm", {"x": [2, "c"]}, {}, "normalized .* must be static"),
    ("layer_norm", {"x": ([2, 4], "int64")}, {}, "float tensor"),
    ("rms_norm", {"x": [2, 4], "r": [1, 4]}, {}, r"rms_norm residual \[1, 4\] differs"),
    ("rms_norm", {"x": [2, "c"]}, {}, "rms_norm normalized .* must be static"),
    ("softmax", {"x": [2, 4]}, {"axis": 2}, "axis 2 is out of range for a rank-2 tensor"),
    ("softmax", {"x": [2, 4]}, {"axis": -3}, "axis -3 is out of range"),
    ("softmax", {"x": ([2, 4], "int32")}, {}, "float tensor"),
])
def test_errors(tmp_path, op, inputs, attrs, match):
    spec_error(tmp_path, op, inputs, match, model_dims={"c": 4}, **attrs)


# -- against PyTorch ----------------------------------------------------------------------------

@pytest.mark.torch
def test_batch_norm_vs_torch(tmp_path):
    torch = pytest.importorskip("torch")
    x = rand(2, 5, 5, 8)
    ws = {"weight": rand(8, seed=1), "bias": rand(8, seed=2), "running_mean": rand(8, seed=3),
          "running_var": np.abs(rand(8, seed=4)) + 0.1}
    t = {k: torch.from_numpy(a) for k, a in ws.items()}
    ref = torch.nn.functional.batch_norm(torch.from_numpy(x.transpose(0, 3, 1, 2)), t["running_mean"],
                                         t["running_var"], t["weight"], t["bias"], training=False,
                                         eps=1e-3)
    out = run1(tmp_path, "batch_norm", {"x": x}, weights=ws, eps=1e-3)
    # a few float32 operations per element, computed in a different order: a few ulps
    np.testing.assert_allclose(out.transpose(0, 3, 1, 2), ref.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("residual", [False, True])
def test_layer_norm_vs_torch(tmp_path, residual):
    torch = pytest.importorskip("torch")
    x, r = rand(3, 7, 48) * 3 + 1, rand(3, 7, 48, seed=5)
    w, b = rand(48, seed=1), rand(48, seed=2)
    arrays = {"x": x, "r": r} if residual else {"x": x}
    out = run1(tmp_path, "layer_norm", arrays, weights={"weight": w, "bias": b}, eps=1e-6)
    t = torch.from_numpy
    ref = torch.nn.functional.layer_norm(t(x + r if residual else x), (48,), t(w), t(b), eps=1e-6)
    # our statistics are float64; torch's float32 mean/variance over 48 values are a few ulps off
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.torch
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_vs_torch(tmp_path, axis):
    torch = pytest.importorskip("torch")
    x = rand(4, 6, 9) * 5
    ref = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
    # exp and a sum of <= 9 terms in float32 on both sides: a few ulps
    np.testing.assert_allclose(run1(tmp_path, "softmax", {"x": x}, axis=axis), ref,
                               rtol=1e-6, atol=1e-7)
