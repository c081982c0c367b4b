"""resize2d against F.interpolate (nearest, nearest-exact, bilinear and bicubic both ways) and
ONNX Resize's other coordinate transforms, roundings and cubic coefficient, computed by hand."""

import numpy as np
import pytest

from .helpers import out_types, rand, run1, spec_error

F32 = np.float32
INTERPOLATE = [  # F.interpolate keywords -> resize2d attributes
    (dict(mode="nearest"), dict()),
    (dict(mode="nearest-exact"), dict(coordinates="half_pixel", rounding="round_prefer_ceil")),
    (dict(mode="bilinear", align_corners=False), dict(mode="linear", coordinates="half_pixel")),
    (dict(mode="bilinear", align_corners=True), dict(mode="linear", coordinates="align_corners")),
]


@pytest.mark.parametrize("torch_kw, attrs", INTERPOLATE)
@pytest.mark.parametrize("size, out", [((4, 5), (8, 10)), ((7, 3), (13, 5)), ((5, 6), (3, 2)),
                                       ((3, 7), (1, 1)), ((6, 9), (6, 9))])
def test_resize_matches_interpolate(tmp_path, torch_kw, attrs, size, out):
    torch = pytest.importorskip("torch")
    x = rand(2, *size, 3, seed=sum(size))
    want = torch.nn.functional.interpolate(torch.from_numpy(x).permute(0, 3, 1, 2), size=out,
                                           **torch_kw).permute(0, 2, 3, 1).numpy()
    got = run1(tmp_path, "resize2d", {"x": x}, size=list(out), **attrs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("corners", [False, True])
@pytest.mark.parametrize("size, out", [((4, 5), (8, 10)), ((7, 3), (13, 5)), ((5, 6), (3, 2)),
                                       ((3, 7), (1, 1)), ((2, 9), (7, 1)), ((6, 9), (6, 9)),
                                       ((30, 30), (28, 28))])
def test_bicubic_matches_interpolate(tmp_path, corners, size, out):
    """Taps past both edges (upsampling: x down to -0.5), downsampling, one output pixel;
    30 -> 28 as CrossViT's 240 -> 224, where the fused rounding of x and of the outer taps'
    weights shows (~5e-5 apart when each product is rounded)."""
    torch = pytest.importorskip("torch")
    x = rand(2, *size, 3, seed=sum(size)) * 4
    want = torch.nn.functional.interpolate(torch.from_numpy(x).permute(0, 3, 1, 2), size=out,
                                           mode="bicubic", align_corners=corners)
    got = run1(tmp_path, "resize2d", {"x": x}, size=list(out), mode="cubic",
               coordinates="align_corners" if corners else "half_pixel")
    np.testing.assert_allclose(got, want.permute(0, 2, 3, 1).numpy(), rtol=1e-5, atol=1e-5)


def test_cubic_coefficient_and_clamped_taps(tmp_path):
    """A row of 4 doubled (half_pixel): output 0 reads x = -0.25, taps -2..1 clamped to 0, 0, 0,
    1 at t = 0.75; with ONNX's A = -0.5 the weights are Keys' by hand."""
    x = np.array([0, 10, 20, 30], F32).reshape(1, 1, 4, 1)
    got = run1(tmp_path, "resize2d", {"x": x}, size=[1, 8], mode="cubic",
               coordinates="half_pixel", cubic_coeff=-0.5).reshape(-1)

    def keys(d, a=-0.5):
        d = abs(d)
        return (a + 2) * d**3 - (a + 3) * d**2 + 1 if d <= 1 else \
            a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a if d < 2 else 0.0
    t = 0.75
    first = sum(keys(d) * v for d, v in zip((1 + t, t, 1 - t, 2 - t), (0, 0, 0, 10)))
    assert abs(got[0] - first) < 1e-5, (got[0], first)
    # a linear ramp away from the edges stays linear under any A (the weights sum to 1)
    np.testing.assert_allclose(got[3:5], [12.5, 17.5], rtol=1e-6)  # x = 1.25, 1.75


def test_onnx_coordinates_and_roundings(tmp_path):
    """A 1-d row of 4 resized to 6 and to 3: source coordinates by hand."""
    x = np.array([0, 10, 20, 30], F32).reshape(1, 1, 4, 1)

    def row(out, **attrs):
        return run1(tmp_path, "resize2d", {"x": x}, size=[1, out], **attrs).reshape(-1)

    # asymmetric: x = o * 4/6 = 0, .67, 1.33, 2, 2.67, 3.33
    np.testing.assert_array_equal(row(6, rounding="ceil"), [0, 10, 20, 20, 30, 30])
    np.testing.assert_array_equal(row(6, rounding="round_prefer_floor"), [0, 10, 10, 20, 30, 30])
    # pytorch_half_pixel equals half_pixel unless the output has one pixel (then x = 0)
    np.testing.assert_array_equal(row(1, mode="linear", coordinates="pytorch_half_pixel"), [0])
    np.testing.assert_array_equal(row(1, mode="linear", coordinates="half_pixel"), [15])
    # half_pixel downsampling to 3: x = (o + .5) * 4/3 - .5 = 0.17, 1.5, 2.83
    np.testing.assert_allclose(row(3, mode="linear", coordinates="half_pixel"),
                               [1 + 2 / 3, 15, 28 + 1 / 3], rtol=1e-6)


def test_shape_and_errors(tmp_path):
    assert out_types(tmp_path, "resize2d", {"x": ["batch", 28, 28, 21]}, {"batch": 8},
                     size=224) == [(["batch", 224, 224, 21], "float32")]
    spec_error(tmp_path, "resize2d", {"x": [2, 4, 4]}, "rank 4", size=8)
    spec_error(tmp_path, "resize2d", {"x": [1, 4, 4, 2]}, "rounding", size=8, mode="linear",
               rounding="ceil")
    spec_error(tmp_path, "resize2d", {"x": [1, 4, 4, 2]}, "rounding", size=8, mode="cubic",
               rounding="round_prefer_ceil")
    spec_error(tmp_path, "resize2d", {"x": [1, 4, 4, 2]}, "cubic_coeff", size=8, mode="linear",
               cubic_coeff=-0.5)
    spec_error(tmp_path, "resize2d", {"x": [1, 4, 4, 2]}, "nearest", size=8, mode="lanczos")
