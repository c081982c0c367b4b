"""resize2d: an NHWC image to another height and width by nearest or bilinear sampling: PyTorch's
upsample_nearest2d / upsample_bilinear2d (F.interpolate) and ONNX Resize with the common
coordinate transforms.

Each output index o along an axis reads source coordinate x(o) (float32 arithmetic, as PyTorch
computes it, so nearest picks the same pixel even where x lands on an integer):

- asymmetric:         x = o * in / out                        (PyTorch 'nearest')
- half_pixel:         x = (o + 0.5) * in / out - 0.5          (bilinear, align_corners=False)
- pytorch_half_pixel: half_pixel, but 0 when out is 1         (ONNX's name)
- align_corners:      x = o * (in - 1) / (out - 1), 0 when out is 1

`nearest` rounds x (floor: PyTorch 'nearest'; round_prefer_ceil with half_pixel: PyTorch
'nearest-exact'); `linear` blends the two neighbours of max(x, 0), the upper one clamped to the
last pixel.
"""

from __future__ import annotations

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim
from ait_build.ops.opdef import (Attr, OpDef, TType, pair, register, require_float,
                                 require_rank, require_static)

COORDINATES = ("asymmetric", "half_pixel", "pytorch_half_pixel", "align_corners")
ROUNDINGS = ("floor", "round_prefer_floor", "round_prefer_ceil", "ceil")


def axis_scale(size_in: int, size_out: int, coordinates: str) -> np.float32:
    """The float32 factor from output to source index, as PyTorch computes it."""
    if coordinates == "align_corners":
        return np.float32(0.0) if size_out == 1 else \
            np.float32(size_in - 1) / np.float32(size_out - 1)
    return np.float32(size_in) / np.float32(size_out)


def source_index(o: np.ndarray, size_in: int, size_out: int, attrs) -> tuple:
    """(lower index, upper index, weight of the upper one) per output index `o` along one axis;
    nearest gives its pick as both indices with weight 0."""
    coordinates = attrs["coordinates"]
    scale = axis_scale(size_in, size_out, coordinates)
    o = o.astype(np.float32)
    if coordinates in ("asymmetric", "align_corners"):
        x = o * scale
    elif coordinates == "pytorch_half_pixel" and size_out == 1:
        x = np.zeros_like(o)
    else:
        x = (o + np.float32(0.5)) * scale - np.float32(0.5)
    last = size_in - 1
    if attrs["mode"] == "nearest":
        rounding = attrs["rounding"]
        picked = {"floor": np.floor(x), "ceil": np.ceil(x),
                  "round_prefer_ceil": np.floor(x + np.float32(0.5)),
                  "round_prefer_floor": np.ceil(x - np.float32(0.5))}[rounding]
        index = np.clip(picked.astype(np.int64), 0, last)
        return index, index, np.zeros_like(x)
    x = np.maximum(x, np.float32(0.0))
    lower = np.minimum(x.astype(np.int64), last)
    upper = np.minimum(lower + 1, last)
    return lower, upper, (x - lower.astype(np.float32)).astype(np.float32)


def _infer(attrs, inputs):
    x = inputs[0]
    require_rank(x, 4, "resize2d input (NHWC)")
    require_float(x, "resize2d input")
    require_static(x.shape[1], "resize2d input height")
    require_static(x.shape[2], "resize2d input width")
    oh, ow = pair(attrs["size"])
    if min(oh, ow) < 1:
        raise OpError(f"resize2d size {list(pair(attrs['size']))} must be >= 1")
    if attrs["mode"] == "linear" and attrs["rounding"] != "floor":
        raise OpError("'rounding' is for mode: nearest")
    return [TType((x.shape[0], Dim.of(oh), Dim.of(ow), x.shape[3]), x.dtype)]


def _reference(attrs, xs, ws):
    x = xs[0].astype(np.float32)
    _, h, w, _ = x.shape
    oh, ow = pair(attrs["size"])
    h0, h1, lh = source_index(np.arange(oh), h, oh, attrs)
    w0, w1, lw = source_index(np.arange(ow), w, ow, attrs)
    lh, lw = lh[None, :, None, None], lw[None, None, :, None]
    top = x[:, h0][:, :, w0] * (1 - lw) + x[:, h0][:, :, w1] * lw
    bottom = x[:, h1][:, :, w0] * (1 - lw) + x[:, h1][:, :, w1] * lw
    return [(top * (1 - lh) + bottom * lh).astype(np.float32)]


register(OpDef(
    name="resize2d", category="resize",
    doc="resamples NHWC images to `size` by nearest or bilinear sampling",
    attrs=(Attr("size", "pair", doc="the output [height, width] (int: both)"),
           Attr("mode", "str", "nearest", ("nearest", "linear"),
                doc="`linear`: bilinear, the two neighbours along each axis"),
           Attr("coordinates", "str", "asymmetric", COORDINATES,
                doc="how an output index maps to a source coordinate (module docstring: "
                    "`ait_build/ops/resize.py`)"),
           Attr("rounding", "str", "floor", ROUNDINGS,
                doc="how `nearest` rounds the source coordinate")),
    infer=_infer, reference=_reference,
    notes="F.interpolate(x, size) on NHWC: mode='nearest' is the default here; "
          "'nearest-exact' is coordinates: half_pixel, rounding: round_prefer_ceil; 'bilinear' "
          "is mode: linear with coordinates: half_pixel, or align_corners. A scale_factor is "
          "written as the size it gives (they agree when in * scale is whole). ONNX Resize's "
          "coordinate_transformation_mode and nearest_mode by the same names."))
