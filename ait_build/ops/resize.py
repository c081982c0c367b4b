"""resize2d: an NHWC image to another height and width by nearest, bilinear or bicubic sampling:
PyTorch's upsample_nearest2d / upsample_bilinear2d / upsample_bicubic2d (F.interpolate) and ONNX
Resize with the common coordinate transforms.

Each output index o along an axis reads source coordinate x(o) (float32 arithmetic, as PyTorch
computes it, so nearest picks the same pixel even where x lands on an integer):

- asymmetric:         x = o * in / out                        (PyTorch 'nearest')
- half_pixel:         x = (o + 0.5) * in / out - 0.5          (bilinear, align_corners=False)
- pytorch_half_pixel: half_pixel, but 0 when out is 1         (ONNX's name)
- align_corners:      x = o * (in - 1) / (out - 1), 0 when out is 1

`nearest` rounds x (floor: PyTorch 'nearest'; round_prefer_ceil with half_pixel: PyTorch
'nearest-exact'); `linear` blends the two neighbours of max(x, 0), the upper one clamped to the
last pixel; `cubic` blends the four at floor(x) - 1 .. floor(x) + 2 of x itself (not clamped
to 0, as PyTorch's and ONNX's cubic), each index clamped to the image (ONNX's
exclude_outside=0), weighted by Keys' cubic convolution with A = `cubic_coeff` at the distances
1 + t, t, 1 - t, 2 - t (t = x - floor(x)). Cubic's half-pixel x and its weights are fused
multiply-adds, rounded once each as PyTorch's compiled kernels round them: at 240 -> 224 that
matches torch 2.14's cpu kernel within 1e-6 where rounding every product is 5e-5 apart.
"""

from __future__ import annotations

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim
from ait_build.ops.opdef import (Attr, OpDef, TType, pair, register, require_float,
                                 require_rank, require_static)

CUBIC_COEFF = -0.75  # PyTorch's A, and ONNX Resize's default cubic_coeff_a
COORDINATES = ("asymmetric", "half_pixel", "pytorch_half_pixel", "align_corners")
ROUNDINGS = ("floor", "round_prefer_floor", "round_prefer_ceil", "ceil")


def axis_scale(size_in: int, size_out: int, coordinates: str) -> np.float32:
    """The float32 factor from output to source index, as PyTorch computes it."""
    if coordinates == "align_corners":
        return np.float32(0.0) if size_out == 1 else \
            np.float32(size_in - 1) / np.float32(size_out - 1)
    return np.float32(size_in) / np.float32(size_out)


def fma32(a, b, c):
    """a * b + c rounded once to float32 (the float32 product is exact in float64)."""
    return (np.float64(a) * np.float64(b) + np.float64(c)).astype(np.float32)


def source_coordinate(o: np.ndarray, size_in: int, size_out: int, coordinates: str,
                      fused: bool = False):
    """The float32 source coordinate x of each output index `o` along one axis; `fused`: the
    half-pixel shift by one fused multiply-add."""
    scale = axis_scale(size_in, size_out, coordinates)
    o = o.astype(np.float32)
    if coordinates in ("asymmetric", "align_corners"):
        return o * scale
    if coordinates == "pytorch_half_pixel" and size_out == 1:
        return np.zeros_like(o)
    if fused:
        return fma32(o + np.float32(0.5), scale, np.float32(-0.5))
    return (o + np.float32(0.5)) * scale - np.float32(0.5)


def cubic_weights(t, a: float) -> list:
    """Keys' weights of the taps at distances 1 + t, t, 1 - t, 2 - t: the polynomial for
    |d| <= 1 and the one for 1 < |d| < 2, in Horner form by fused multiply-adds (the outer
    taps' weights, ~1e-3, cancel terms of ~3: a rounding more or less moves them by 1e-6)."""
    a = np.float32(a)
    def near(d):
        return fma32(fma32(a + 2, d, -(a + 3)) * d, d, np.float32(1))
    def far(d):
        return fma32(fma32(fma32(a, d, -5 * a), d, 8 * a), d, -4 * a)
    one = np.float32(1)
    return [far(t + one), near(t), near(one - t), far(one - t + one)]


def source_taps(o: np.ndarray, size_in: int, size_out: int, attrs) -> tuple:
    """(indices, weights): lists of one (nearest), two (linear) or four (cubic) source index
    and float32 weight arrays per output index `o` along one axis."""
    x = source_coordinate(o, size_in, size_out, attrs["coordinates"], attrs["mode"] == "cubic")
    last = size_in - 1
    if attrs["mode"] == "nearest":
        rounding = attrs["rounding"]
        picked = {"floor": np.floor(x), "ceil": np.ceil(x),
                  "round_prefer_ceil": np.floor(x + np.float32(0.5)),
                  "round_prefer_floor": np.ceil(x - np.float32(0.5))}[rounding]
        return [np.clip(picked.astype(np.int64), 0, last)], [np.ones_like(x)]
    if attrs["mode"] == "cubic":
        floor = np.minimum(np.floor(x).astype(np.int64), last)
        t = np.clip(x - floor.astype(np.float32), 0, 1).astype(np.float32)
        return ([np.clip(floor + k, 0, last) for k in (-1, 0, 1, 2)],
                cubic_weights(t, attrs["cubic_coeff"]))
    x = np.maximum(x, np.float32(0.0))
    lower = np.minimum(x.astype(np.int64), last)
    upper = np.minimum(lower + 1, last)
    weight = (x - lower.astype(np.float32)).astype(np.float32)
    return [lower, upper], [np.float32(1) - weight, weight]


def _infer(attrs, inputs):
    x = inputs[0]
    require_rank(x, 4, "resize2d input (NHWC)")
    require_float(x, "resize2d input")
    require_static(x.shape[1], "resize2d input height")
    require_static(x.shape[2], "resize2d input width")
    oh, ow = pair(attrs["size"])
    if min(oh, ow) < 1:
        raise OpError(f"resize2d size {list(pair(attrs['size']))} must be >= 1")
    if attrs["mode"] != "nearest" and attrs["rounding"] != "floor":
        raise OpError("'rounding' is for mode: nearest")
    if attrs["mode"] != "cubic" and attrs["cubic_coeff"] != CUBIC_COEFF:
        raise OpError("'cubic_coeff' is for mode: cubic")
    return [TType((x.shape[0], Dim.of(oh), Dim.of(ow), x.shape[3]), x.dtype)]


def _reference(attrs, xs, ws):
    """Along the width for each height tap, then along the height, as the kernels sum."""
    x = xs[0].astype(np.float32)
    _, h, w, _ = x.shape
    oh, ow = pair(attrs["size"])
    h_taps, h_weights = source_taps(np.arange(oh), h, oh, attrs)
    w_taps, w_weights = source_taps(np.arange(ow), w, ow, attrs)
    out = None
    for hi, wh in zip(h_taps, h_weights):
        rows = x[:, hi]
        row = None
        for wi, ww in zip(w_taps, w_weights):
            term = rows[:, :, wi] * ww[None, None, :, None]
            row = term if row is None else row + term
        term = row * wh[None, :, None, None]
        out = term if out is None else out + term
    return [out.astype(np.float32)]


register(OpDef(
    name="resize2d", category="resize",
    doc="resamples NHWC images to `size` by nearest, bilinear or bicubic sampling",
    attrs=(Attr("size", "pair", doc="the output [height, width] (int: both)"),
           Attr("mode", "str", "nearest", ("nearest", "linear", "cubic"),
                doc="`linear`: bilinear, the two neighbours along each axis; `cubic`: bicubic, "
                    "the four neighbours along each axis"),
           Attr("coordinates", "str", "asymmetric", COORDINATES,
                doc="how an output index maps to a source coordinate (module docstring: "
                    "`ait_build/ops/resize.py`)"),
           Attr("rounding", "str", "floor", ROUNDINGS,
                doc="how `nearest` rounds the source coordinate"),
           Attr("cubic_coeff", "float", CUBIC_COEFF,
                doc="`cubic`'s A (ONNX Resize's cubic_coeff_a)")),
    infer=_infer, reference=_reference,
    notes="F.interpolate(x, size) on NHWC: mode='nearest' is the default here; "
          "'nearest-exact' is coordinates: half_pixel, rounding: round_prefer_ceil; 'bilinear' "
          "is mode: linear with coordinates: half_pixel, or align_corners; 'bicubic' is mode: cubic "
          "likewise (antialias=False). A scale_factor is written as the size it gives (they "
          "agree when in * scale is whole). ONNX Resize's coordinate_transformation_mode and "
          "nearest_mode by the same names; its cubic with exclude_outside=0."))
