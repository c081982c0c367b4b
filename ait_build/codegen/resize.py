"""Lowering of resize2d on any backend: the `resize2d` template of each backend, with the source
coordinate of an output row and column written here once, as C++ both host and device code
compile (ops/resize.py defines the arithmetic; the kernels repeat it in float32 so a nearest
pick lands on the pixel PyTorch picks)."""

from __future__ import annotations

from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.elementwise import float_literal
from ait_build.codegen.kernel import io_params, make_kernel
from ait_build.ops.opdef import pair
from ait_build.ops.resize import axis_scale

ROUND = {"floor": "floorf({x})", "ceil": "ceilf({x})",
         "round_prefer_ceil": "floorf({x} + 0.5f)", "round_prefer_floor": "ceilf({x} - 0.5f)"}


def axis_code(axis: str, index: str, size_in: int, size_out: int, attrs) -> str:
    """C++ statements defining `{axis}0`, `{axis}1` (int64_t source indices) and `l{axis}` (the
    weight of `{axis}1`) for output index `index` along one axis."""
    coordinates = attrs["coordinates"]
    scale = float_literal(axis_scale(size_in, size_out, coordinates))
    at = f"static_cast<float>({index})"
    if coordinates in ("asymmetric", "align_corners"):
        x = f"{at} * {scale}"
    elif coordinates == "pytorch_half_pixel" and size_out == 1:
        x = f"{at} * 0.0f"  # the one output pixel reads the first
    else:
        x = f"({at} + 0.5f) * {scale} - 0.5f"
    last = size_in - 1
    if attrs["mode"] == "nearest":
        pick = ROUND[attrs["rounding"]].format(x=f"({x})")
        return (f"int64_t {axis}0 = static_cast<int64_t>({pick});\n"
                f"{axis}0 = {axis}0 < 0 ? 0 : {axis}0 > {last} ? {last} : {axis}0;\n"
                f"const int64_t {axis}1 = {axis}0;\n"
                f"const float l{axis} = 0.0f;")
    return (f"const float x{axis} = fmaxf({x}, 0.0f);\n"
            f"int64_t {axis}0 = static_cast<int64_t>(x{axis});\n"
            f"{axis}0 = {axis}0 > {last} ? {last} : {axis}0;\n"
            f"const int64_t {axis}1 = {axis}0 < {last} ? {axis}0 + 1 : {last};\n"
            f"const float l{axis} = x{axis} - static_cast<float>({axis}0);")


def lower_resize(lw) -> None:
    node, attrs = lw.node, lw.node.attrs
    x, out = node.inputs[0], node.output
    n, h, w, c = lw.shape(x)
    oh, ow = pair(attrs["size"])
    context = dict(ctype=lw.ctype(out), linear=attrs["mode"] == "linear", H=h.value, W=w.value,
                   channels=c.value if c.is_static else 0,
                   OH=oh, OW=ow, h_code=axis_code("h", "oh", h.value, oh, attrs),
                   w_code=axis_code("w", "ow", w.value, ow, attrs))
    params = io_params(lw, out, "x") + [("int64_t", "N"), ("int64_t", "C")]
    kernel = make_kernel("resize2d", node.op, lw.template("resize2d"), context, params)
    lw.call(kernel, [lw.dst(out), lw.src(x), cexpr(n), cexpr(c)])
