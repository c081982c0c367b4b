"""grid_sample (PyTorch's F.grid_sample, ONNX GridSample) written with our ops: each output point's
source coordinate from the grid, its two or four neighbouring pixels fetched by one
gather_elements over the flattened image per corner, weighted and summed. Deformable DETR's
multi-scale deformable attention samples its value maps this way."""

from __future__ import annotations

from ait_build.errors import AitError
from ait_build.importers.graph import Value
from ait_build.ir.dims import Dim


def grid_sample(lower, x: Value, grid: Value, mode: str, padding: str, align_corners: bool):
    """x [N, C, H, W] (static H, W) sampled at grid [N, Ho, Wo, 2] (x then y in [-1, 1]):
    [N, C, Ho, Wo]. `mode` bilinear or nearest; `padding` zeros or border."""
    if x.rank != 4 or grid.rank != 4:
        raise AitError("grid_sample of a 4-d input over a 4-d grid (2-d sampling only)")
    if mode not in ("bilinear", "nearest") or padding not in ("zeros", "border"):
        raise AitError(f"grid_sample with mode '{mode}' and padding '{padding}' (bilinear or "
                       "nearest, zeros or border)")
    n, c, h, w = x.source_shape
    if not (h.is_static and w.is_static):
        raise AitError(f"grid_sample of a {h}x{w} image (static sizes are needed)")
    _, ho, wo, _ = grid.source_shape
    points = ho * wo
    coords = [_source(lower, lower.select(grid, 3, axis), size.value, align_corners, padding)
              for axis, size in ((0, w), (1, h))]  # x along W, y along H
    flat = lower.reshape(x, (n, c, h * w))
    out = None
    for (xi, wx), (yi, wy) in _corners(lower, coords, mode):
        inside = lower.binary("logical_and", _within(lower, xi, w.value),
                              _within(lower, yi, h.value))
        weight = lower.where_(inside, lower.binary("mul", wx, wy) if wx is not None else 1.0, 0.0)
        index = lower.binary("add", lower.binary("mul", _clamped(lower, yi, h.value), w.value),
                             _clamped(lower, xi, w.value))
        index = lower.expand(lower.reshape(index, (n, Dim.of(1), points)), (n, c, points))
        term = lower.binary("mul", lower.gather_elements(flat, index, 2),
                            lower.reshape(weight, (n, Dim.of(1), points)))
        out = term if out is None else lower.binary("add", out, term)
    return lower.reshape(out, (n, c, ho, wo))


def _source(lower, g: Value, size: int, align_corners: bool, padding: str) -> Value:
    """The pixel coordinate of normalized grid values g along an axis of `size` pixels."""
    if align_corners:  # -1 and 1 are the first and last pixels' centres
        pos = lower.binary("mul", lower.binary("add", g, 1.0), (size - 1) / 2.0)
    else:  # -1 and 1 are the outer edges of the first and last pixels
        pos = lower.binary("mul", lower.binary("sub", lower.binary("mul", lower.binary(
            "add", g, 1.0), float(size)), 1.0), 0.5)
    if padding == "border":
        pos = lower.binary("minimum", lower.binary("maximum", pos, 0.0), float(size - 1))
    return pos


def _corners(lower, coords: list, mode: str) -> list:
    """[((x index, x weight), (y index, y weight))] of the pixels a point reads: the four
    neighbours with bilinear weights, or the nearest one (weight None)."""
    if mode == "nearest":  # halves to even, as PyTorch's nearbyint
        (x, y) = (lower.cast(lower.unary("round", p), "int64") for p in coords)
        return [((x, None), (y, None))]
    axes = []
    for p in coords:
        low = lower.unary("floor", p)
        frac = lower.binary("sub", p, low)
        i0 = lower.cast(low, "int64")
        axes.append([(i0, lower.binary("sub", 1.0, frac)),
                     (lower.binary("add", i0, 1), frac)])
    return [(xc, yc) for yc in axes[1] for xc in axes[0]]


def _within(lower, i: Value, size: int) -> Value:
    return lower.binary("logical_and", lower.binary("greater_equal", i, 0),
                        lower.binary("less", i, size))


def _clamped(lower, i: Value, size: int) -> Value:
    return lower.binary("minimum", lower.binary("maximum", i, 0), size - 1)
