"""conv2d and the pools (NHWC activations, PyTorch OIHW conv weights)."""

import numpy as np
import pytest

from .helpers import out_types, rand, run1, spec_error, weights_of

F32 = np.float32


def nhwc(*rows, channels=1):
    """A [1, H, W, 1] image from rows of numbers."""
    return np.array(rows, F32).reshape(1, len(rows), len(rows[0]), channels)


def conv(tmp_path, x, w, b=None, residual=None, **attrs):
    arrays = {"x": x} if residual is None else {"x": x, "residual": residual}
    weights = {"weight": w} if b is None else {"weight": w, "bias": b}
    return run1(tmp_path, "conv2d", arrays, weights=weights, out_channels=w.shape[0],
                kernel=list(w.shape[2:]), bias=b is not None, **attrs)


# -- hand-computed conv2d -----------------------------------------------------------------------

def test_ones_kernel_counts_neighbours(tmp_path):
    # a 3x3 all-ones kernel over ones with padding 1 counts each pixel's in-bounds neighbours
    out = conv(tmp_path, np.ones((1, 3, 3, 1), F32), np.ones((1, 1, 3, 3), F32), padding=1)
    np.testing.assert_array_equal(out[0, :, :, 0], [[4, 6, 4], [6, 9, 6], [4, 6, 4]])


def test_stride_sums_blocks(tmp_path):
    x = np.arange(16, dtype=F32).reshape(1, 4, 4, 1)
    out = conv(tmp_path, x, np.ones((1, 1, 2, 2), F32), stride=2)
    np.testing.assert_array_equal(out[0, :, :, 0], [[0 + 1 + 4 + 5, 2 + 3 + 6 + 7],
                                                    [8 + 9 + 12 + 13, 10 + 11 + 14 + 15]])


def test_dilation_reads_every_other_pixel(tmp_path):
    x = np.arange(25, dtype=F32).reshape(1, 5, 5, 1)  # x[r, c] = 5r + c
    out = conv(tmp_path, x, np.ones((1, 1, 3, 3), F32), dilation=2)
    # one window over rows and columns 0, 2, 4: sum of 5r + c = 3*5*6 + 3*6
    assert out.shape == (1, 1, 1, 1) and out.item() == 108


def test_non_square_kernel_and_padding(tmp_path):
    x = nhwc([1, 2, 3])
    out = conv(tmp_path, x, np.array([1, 10, 100], F32).reshape(1, 1, 1, 3), padding=[0, 1])
    # out[j] = x[j-1] + 10 x[j] + 100 x[j+1], zero outside
    np.testing.assert_array_equal(out.ravel(), [10 + 200, 1 + 20 + 300, 2 + 30])


def test_depthwise_groups(tmp_path):
    x = np.stack([np.ones((3, 3)), 10 * np.ones((3, 3))], -1)[None].astype(F32)
    w = np.stack([np.ones((1, 3, 3)), 2 * np.ones((1, 3, 3))]).astype(F32)  # [2, 1, 3, 3]
    out = conv(tmp_path, x, w, groups=2)
    np.testing.assert_array_equal(out.ravel(), [9, 180])  # each channel sees only itself


def test_two_groups_split_channels(tmp_path):
    x = np.array([1, 2, 30, 40], F32).reshape(1, 1, 1, 4)
    w = np.ones((2, 2, 1, 1), F32)  # out 0 reads in 0..1, out 1 reads in 2..3
    np.testing.assert_array_equal(conv(tmp_path, x, w, groups=2).ravel(), [3, 70])


def test_epilogue_order_is_act_of_acc_plus_bias_plus_residual(tmp_path):
    x, w = nhwc([2.0]), np.ones((1, 1, 1, 1), F32)
    # relu(2 - 3 + 0.5) = 0, where relu(2 - 3) + 0.5 would give 0.5
    out = conv(tmp_path, x, w, b=np.array([-3], F32), residual=nhwc([0.5]), activation="relu")
    assert out.item() == 0
    out = conv(tmp_path, x, w, b=np.array([-3], F32), residual=nhwc([1.5]), activation="relu")
    assert out.item() == 0.5


def test_residual_broadcasts_over_pixels(tmp_path):
    x = np.ones((1, 2, 2, 1), F32)
    out = conv(tmp_path, x, np.ones((2, 1, 1, 1), F32), residual=np.array([10, 20], F32))
    np.testing.assert_array_equal(out[0, 0, 0], [11, 21])


def test_weights_follow_pytorch_names_and_layout(tmp_path):
    x = {"x": [1, 5, 5, 4]}
    assert weights_of(tmp_path, "conv2d", x, out_channels=8, kernel=[3, 1], groups=2) == {
        "weight": ("n.weight", [8, 2, 3, 1]), "bias": ("n.bias", [8])}
    assert weights_of(tmp_path, "conv2d", x, out_channels=8, kernel=1, bias=False) == {
        "weight": ("n.weight", [8, 4, 1, 1])}


def test_output_shape_with_symbolic_batch(tmp_path):
    got = out_types(tmp_path, "conv2d", {"x": ["batch", 224, 224, 3]}, model_dims={"batch": 8},
                    out_channels=64, kernel=7, stride=2, padding=3)
    assert got == [(["batch", 112, 112, 64], "float32")]


# -- hand-computed pools ------------------------------------------------------------------------

def test_max_pool_padding_never_wins(tmp_path):
    x = nhwc([-1, -2], [-3, -4])  # all negative: a zero pad would win
    out = run1(tmp_path, "max_pool2d", {"x": x}, kernel=2, stride=1, padding=1)
    np.testing.assert_array_equal(out[0, :, :, 0], [[-1, -1, -2], [-1, -1, -2], [-3, -3, -4]])


def test_pool_stride_defaults_to_kernel_like_pytorch(tmp_path):
    x = np.arange(16, dtype=F32).reshape(1, 4, 4, 1)
    out = run1(tmp_path, "max_pool2d", {"x": x}, kernel=2)
    np.testing.assert_array_equal(out[0, :, :, 0], [[5, 7], [13, 15]])
    out = run1(tmp_path, "avg_pool2d", {"x": x}, kernel=2)
    np.testing.assert_array_equal(out[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])


def test_max_pool_dilation(tmp_path):
    x = np.arange(9, dtype=F32).reshape(1, 3, 3, 1)
    out = run1(tmp_path, "max_pool2d", {"x": x}, kernel=2, dilation=2)  # corners 0, 2, 6, 8
    assert out.shape == (1, 1, 1, 1) and out.item() == 8


@pytest.mark.parametrize("include, expected", [(True, 10 / 9), (False, 10 / 4)])
def test_avg_pool_count_include_pad(tmp_path, include, expected):
    # every 3x3 window over the padded 2x2 image holds all four pixels (sum 10) and five zeros
    out = run1(tmp_path, "avg_pool2d", {"x": nhwc([1, 2], [3, 4])}, kernel=3, stride=1, padding=1,
               count_include_pad=include)
    np.testing.assert_allclose(out, np.full((1, 2, 2, 1), expected), rtol=1e-7)


@pytest.mark.parametrize("keepdims, shape", [(False, [2, 3]), (True, [2, 1, 1, 3])])
def test_global_avg_pool(tmp_path, keepdims, shape):
    x = np.arange(24, dtype=F32).reshape(2, 2, 2, 3)
    out = run1(tmp_path, "global_avg_pool", {"x": x}, keepdims=keepdims)
    assert list(out.shape) == shape
    np.testing.assert_array_equal(out.reshape(2, 3), [[4.5, 5.5, 6.5], [16.5, 17.5, 18.5]])


def test_global_avg_pool_sums_in_float64(tmp_path):
    """The oracle must be the exact side: the mean of a 112x112 map with a large offset, where a
    float32 running sum drifts by ~1e-5 relative, matches the float64 mean rounded once."""
    x = (1000.0 + np.random.default_rng(0).standard_normal((1, 112, 112, 2))).astype(F32)
    exact = x.astype(np.float64).mean(axis=(1, 2)).astype(F32)
    np.testing.assert_array_equal(run1(tmp_path, "global_avg_pool", {"x": x}), exact)
    running = np.zeros(2, F32)
    for row in x.reshape(-1, 2):
        running += row
    assert np.abs(running / F32(112 * 112) - exact).max() > 1e-4  # what float32 would give


# -- errors -------------------------------------------------------------------------------------

X = {"x": [1, 8, 8, 4]}


@pytest.mark.parametrize("op, inputs, attrs, match", [
    ("conv2d", {"x": [1, 8, 4]}, {"out_channels": 4, "kernel": 3}, r"must have rank 4, got \[1, 8, 4\]"),
    ("conv2d", X, {"out_channels": 4, "kernel": 3, "groups": 3}, "groups=3 must divide in_channels=4"),
    ("conv2d", X, {"out_channels": 6, "kernel": 3, "groups": 4}, "out_channels=6"),
    ("conv2d", X, {"out_channels": 0, "kernel": 3}, "'out_channels' must be >= 1, got 0"),
    ("conv2d", X, {"out_channels": 4, "kernel": 3, "groups": 0}, "'groups' must be >= 1"),
    ("conv2d", X, {"out_channels": 4, "kernel": 9}, "window 9 .* larger than the padded input 8"),
    ("conv2d", X, {"out_channels": 4, "kernel": 3, "dilation": 4}, r"dilation 4\) is larger"),
    ("conv2d", X, {"out_channels": 4, "kernel": 3, "stride": 0}, "must be >= 1 and padding >= 0"),
    ("conv2d", X, {"out_channels": 4, "kernel": 3, "padding": -1}, "padding >= 0"),
    ("conv2d", X, {"out_channels": 4, "kernel": [3, 3, 3]}, "an integer or a list of two integers"),
    ("conv2d", {"x": ([1, 8, 8, 4], "int32")}, {"out_channels": 4, "kernel": 1}, "float tensor"),
    ("conv2d", {"x": [1, 8, 8, "c"]}, {"out_channels": 4, "kernel": 1}, "channels must be static"),
    ("conv2d", {"x": [1, "h", 8, 4]}, {"out_channels": 4, "kernel": 1}, "height/width must be static"),
    ("conv2d", {"x": [1, 8, 8, 4], "r": [1, 8, 8, 5]}, {"out_channels": 4, "kernel": 1},
     r"residual \[1, 8, 8, 5\] does not match the conv2d output \[1, 8, 8, 4\]"),
    ("conv2d", {"x": [1, 8, 8, 4], "r": ([1, 8, 8, 4], "float16")}, {"out_channels": 4, "kernel": 1},
     "residual is float16 but the conv2d output is float32"),
    ("conv2d", X, {"out_channels": 4, "kernel": 1, "activation": "relu7"}, "must be one of"),
    ("max_pool2d", X, {"kernel": 3, "padding": 2}, "padding 2 must be at most half the kernel 3"),
    ("avg_pool2d", X, {"kernel": 2, "padding": [0, 2]}, "at most half the kernel"),
    ("max_pool2d", {"x": [8, 8, 4]}, {"kernel": 2}, "must have rank 4"),
    ("avg_pool2d", X, {"kernel": 2, "dilation": 2}, "has no attribute 'dilation'"),
    ("global_avg_pool", {"x": [1, 8, 4]}, {}, "must have rank 4"),
    ("global_avg_pool", {"x": ([1, 2, 2, 4], "int64")}, {}, "float tensor"),
])
def test_errors(tmp_path, op, inputs, attrs, match):
    spec_error(tmp_path, op, inputs, match, model_dims={"c": 8, "h": 8}, **attrs)


# -- against PyTorch ----------------------------------------------------------------------------

# Conv sums K = C/g*kh*kw <= 72 products of unit normals in float32, in a different order than
# torch's kernels: rounding differences are ~sqrt(K) * eps * |terms| ~ 1e-6, so 1e-5 is tight.
CONV_TOL = dict(rtol=1e-5, atol=1e-5)


def to_nchw(x):
    return x.transpose(0, 3, 1, 2)


@pytest.mark.torch
@pytest.mark.parametrize("c, o, kernel, stride, padding, dilation, groups", [
    (3, 8, 3, 1, 1, 1, 1),
    (4, 6, [3, 1], [2, 1], [1, 0], 1, 2),
    (8, 8, 3, 2, 1, 1, 8),  # depthwise
    (6, 4, 3, 1, 2, 2, 2),  # dilated, grouped
    (4, 4, 5, [1, 3], 2, [2, 1], 1),
    (5, 7, 1, 1, 0, 1, 1),
])
def test_conv2d_vs_torch(tmp_path, c, o, kernel, stride, padding, dilation, groups):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    x, w, b = rand(2, 9, 10, c, seed=1), rand(o, c // groups, kh, kw, seed=2), rand(o, seed=3)
    r = rand(2, 1, 1, o, seed=4)
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    out = conv(tmp_path, x, w, b=b, residual=r, activation="silu", **attrs)
    ref = F.conv2d(torch.from_numpy(to_nchw(x)), torch.from_numpy(w), torch.from_numpy(b), **attrs)
    ref = F.silu(ref + torch.from_numpy(to_nchw(r)))
    np.testing.assert_allclose(to_nchw(out), ref.numpy(), **CONV_TOL)


@pytest.mark.torch
@pytest.mark.parametrize("op, attrs", [
    ("max_pool2d", dict(kernel=3, stride=2, padding=1)),
    ("max_pool2d", dict(kernel=[2, 3], stride=[1, 2], padding=[1, 1], dilation=[2, 1])),
    ("max_pool2d", dict(kernel=2)),
    ("avg_pool2d", dict(kernel=3, stride=2, padding=1, count_include_pad=True)),
    ("avg_pool2d", dict(kernel=3, stride=2, padding=1, count_include_pad=False)),
    ("avg_pool2d", dict(kernel=[2, 4], stride=[2, 1], padding=[1, 2], count_include_pad=False)),
])
def test_pools_vs_torch(tmp_path, op, attrs):
    torch = pytest.importorskip("torch")
    x = rand(2, 9, 11, 3)
    out = run1(tmp_path, op, {"x": x}, **attrs)
    kw = dict(kernel_size=attrs["kernel"])
    kw.update({k: v for k, v in attrs.items() if k != "kernel"})
    ref = getattr(torch.nn.functional, op)(torch.from_numpy(to_nchw(x)), **kw).numpy()
    # max is exact; an average of <= 12 float32 values differs by a few ulps of the sum
    np.testing.assert_allclose(to_nchw(out), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.torch
def test_global_avg_pool_vs_torch(tmp_path):
    torch = pytest.importorskip("torch")
    x = rand(2, 7, 7, 16)
    ref = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(to_nchw(x)), 1).numpy()
    # the mean of 49 values in float32: a few ulps apart in summation order
    np.testing.assert_allclose(run1(tmp_path, "global_avg_pool", {"x": x}), ref[:, :, 0, 0],
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("size, kernel, stride, padding", [
    (6, 3, 2, 0), (7, 2, 2, 1), (5, 3, 3, 1), (8, 3, 2, 1), (4, 2, 3, 0)])
def test_ceil_mode_pools_match_torch(tmp_path, op, size, kernel, stride, padding):
    """ceil_mode keeps a last, partial window where the stride leaves one (not one that would
    start in the trailing padding); an average divides by the cells it covers."""
    torch = pytest.importorskip("torch")
    x = rand(2, size, size + 1, 3, seed=size)
    attrs = dict(kernel=kernel, stride=stride, padding=padding, ceil_mode=True)
    t = torch.from_numpy(x).permute(0, 3, 1, 2)
    if op == "max_pool2d":
        want = torch.nn.functional.max_pool2d(t, kernel, stride, padding, ceil_mode=True)
    else:
        attrs["count_include_pad"] = False
        want = torch.nn.functional.avg_pool2d(t, kernel, stride, padding, ceil_mode=True,
                                              count_include_pad=False)
    got = run1(tmp_path, op, {"x": x}, **attrs)
    np.testing.assert_allclose(got, want.permute(0, 2, 3, 1).numpy(), rtol=1e-6, atol=1e-7)


def test_ceil_mode_average_counting_padding_needs_it_written_out(tmp_path):
    spec_error(tmp_path, "avg_pool2d", {"x": [1, 6, 6, 1]}, "pad node", kernel=3, stride=2,
               padding=1, ceil_mode=True)
