"""Lowering of resize2d on any backend: the `resize2d` template of each backend, with the source
coordinate of an output row and column written here once, as C++ both host and device code
compile (ops/resize.py defines the arithmetic; the kernels repeat it in float32 so a nearest
pick lands on the pixel PyTorch picks, and cubic's fused multiply-adds as explicit fmaf so no
compiler's contraction changes its rounding)."""

from __future__ import annotations

import numpy as np

from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.elementwise import float_literal
from ait_build.codegen.kernel import io_params, make_kernel
from ait_build.ops.opdef import pair
from ait_build.ops.resize import axis_scale

ROUND = {"floor": "floorf({x})", "ceil": "ceilf({x})",
         "round_prefer_ceil": "floorf({x} + 0.5f)", "round_prefer_floor": "ceilf({x} - 0.5f)"}


def axis_code(axis: str, index: str, size_in: int, size_out: int, attrs) -> str:
    """C++ statements defining the source indices `{axis}0`.. (int64_t) and their weights
    `l{axis}0`.. (float) for output index `index` along one axis: one tap (nearest), two
    (linear) or four (cubic), as ops/resize.py's source_taps."""
    coordinates = attrs["coordinates"]
    scale = float_literal(axis_scale(size_in, size_out, coordinates))
    at = f"static_cast<float>({index})"
    if coordinates in ("asymmetric", "align_corners"):
        x = f"{at} * {scale}"
    elif coordinates == "pytorch_half_pixel" and size_out == 1:
        x = f"{at} * 0.0f"  # the one output pixel reads the first
    elif attrs["mode"] == "cubic":
        x = f"fmaf({at} + 0.5f, {scale}, -0.5f)"
    else:
        x = f"({at} + 0.5f) * {scale} - 0.5f"
    last = size_in - 1
    if attrs["mode"] == "nearest":
        pick = ROUND[attrs["rounding"]].format(x=f"({x})")
        return (f"int64_t {axis}0 = static_cast<int64_t>({pick});\n"
                f"{axis}0 = {axis}0 < 0 ? 0 : {axis}0 > {last} ? {last} : {axis}0;")
    if attrs["mode"] == "cubic":
        # x not clamped to 0: the taps at floor(x) - 1 .. + 2 clamp to the image one by one
        lines = [f"const float x{axis} = {x};",
                 f"int64_t f{axis} = static_cast<int64_t>(floorf(x{axis}));",
                 f"f{axis} = f{axis} > {last} ? {last} : f{axis};",
                 f"const float t{axis} = fminf(fmaxf(x{axis} - static_cast<float>(f{axis}), "
                 "0.0f), 1.0f);"]
        for k, step in enumerate((" - 1", "", " + 1", " + 2")):
            tap = f"(f{axis}{step})"
            lines.append(f"const int64_t {axis}{k} = {tap} < 0 ? 0 : {tap} > {last} ? {last} "
                         f": {tap};")
        lines.append(f"const float s{axis} = 1.0f - t{axis};")
        for k, d in enumerate((f"(t{axis} + 1.0f)", f"t{axis}", f"s{axis}", f"(s{axis} + 1.0f)")):
            lines.append(f"const float l{axis}{k} = {cubic_weight(d, attrs['cubic_coeff'], k)};")
        return "\n".join(lines)
    return (f"const float x{axis} = fmaxf({x}, 0.0f);\n"
            f"int64_t {axis}0 = static_cast<int64_t>(x{axis});\n"
            f"{axis}0 = {axis}0 > {last} ? {last} : {axis}0;\n"
            f"const int64_t {axis}1 = {axis}0 < {last} ? {axis}0 + 1 : {last};\n"
            f"const float l{axis}1 = x{axis} - static_cast<float>({axis}0);\n"
            f"const float l{axis}0 = 1.0f - l{axis}1;")


def cubic_weight(d: str, a: float, k: int) -> str:
    """Tap k's weight at distance `d` (a float C++ expression), by the fused multiply-adds of
    ops/resize.py's cubic_weights: the inner taps' polynomial (k 1, 2) or the outer ones'."""
    a = np.float32(a)
    c = [float_literal(v) for v in (a, a + 2, -(a + 3), -5 * a, 8 * a, -4 * a)]
    if k in (1, 2):
        return f"fmaf(fmaf({c[1]}, {d}, {c[2]}) * {d}, {d}, 1.0f)"
    return f"fmaf(fmaf(fmaf({c[0]}, {d}, {c[3]}), {d}, {c[4]}), {d}, {c[5]})"


def taps(attrs) -> int:
    return {"nearest": 1, "linear": 2, "cubic": 4}[attrs["mode"]]


def lower_resize(lw) -> None:
    node, attrs = lw.node, lw.node.attrs
    x, out = node.inputs[0], node.output
    n, h, w, c = lw.shape(x)
    oh, ow = pair(attrs["size"])
    context = dict(ctype=lw.ctype(out), taps=taps(attrs), H=h.value, W=w.value,
                   channels=c.value if c.is_static else 0,
                   OH=oh, OW=ow, h_code=axis_code("h", "oh", h.value, oh, attrs),
                   w_code=axis_code("w", "ow", w.value, ow, attrs))
    params = io_params(lw, out, "x") + [("int64_t", "N"), ("int64_t", "C")]
    kernel = make_kernel("resize2d", node.op, lw.template("resize2d"), context, params)
    lw.call(kernel, [lw.dst(out), lw.src(x), cexpr(n), cexpr(c)])
