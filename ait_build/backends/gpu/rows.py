"""GPU lowering of layer_norm and rms_norm (+residual) and of pads of the last dim, shared by the
GPU backends (softmax and the pools are every backend's: codegen/rows_and_windows.py). Storage in the model's
dtype, float32 math; sizes are run-time arguments, so one kernel serves every layer of a kind and
only what changes the code (residual, a static row width) is compiled in."""

from __future__ import annotations

from ait_build.codegen import strided_copy
from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.elementwise import float_literal
from ait_build.codegen.kernel import io_params, make_kernel
from ait_build.ir.dims import Dim

# a row a warp holds in registers: at most this many 16-byte chunks per lane
MAX_ROW_CHUNKS = 8


def warp_row_layout(width, dtype: str) -> dict:
    """The warp-per-row layer norm's constants when the row width is static and splits into
    16-byte vectors (8 float16/bfloat16 or 4 float32 elements) of which each lane holds at most
    MAX_ROW_CHUNKS; else chunks=0 (the block-per-row kernel only)."""
    width = Dim.of(width)
    vec = 16 // (2 if dtype in ("float16", "bfloat16") else 4)
    if not width.is_static or width.value % vec:
        return dict(chunks=0, vec=vec, width=0)
    chunks = -(-width.value // (32 * vec))
    return dict(chunks=chunks if chunks <= MAX_ROW_CHUNKS else 0, vec=vec, width=width.value)


def lower_layer_norm(lw) -> None:
    """layer_norm, and rms_norm on the same template (no centering, no bias)."""
    node = lw.node
    x, out = node.inputs[0], node.output
    has_res = len(node.inputs) > 1
    affine = bool(node.attrs["affine"])
    center = node.op == "layer_norm"
    roles = (["weight"] + (["bias"] if center else [])) if affine else []
    params = io_params(lw, out, "x", *(["res"] if has_res else []))
    params += [("const float*", role) for role in roles]
    params += [("int64_t", "rows"), ("int64_t", "C"), ("float", "eps")]
    context = dict(has_residual=has_res, affine=affine, center=center, ctype=lw.ctype(out),
                   **warp_row_layout(lw.shape(x)[-1], lw.dtype(out)))
    kernel = make_kernel(node.op + ("_res" if has_res else ""), node.op,
                         lw.template("layer_norm"), context, params)
    args = [lw.dst(out), lw.src(x)] + ([lw.src(node.inputs[1])] if has_res else [])
    args += [lw.weight(role) for role in roles]
    args += [cexpr(elements(lw.shape(x)[:-1])), cexpr(lw.shape(x)[-1]),
             float_literal(node.attrs["eps"])]
    lw.call(kernel, args)


# the padded rows a thread of pad_channels.cu.j2 holds in registers: at most this many elements
PAD_ROW_ELEMENTS = 64


def lower_pad(lw) -> None:
    """A pad of the last dim alone (the image channels in front of a stem conv) writes each
    padded row once from registers; any other pad is the shared one-pass padded copy."""
    node = lw.node
    x, out = node.inputs[0], node.output
    pads = [Dim.of(p) for p in node.attrs["pads"]]
    c_in, c_out = Dim.of(lw.shape(x)[-1]), Dim.of(lw.shape(out)[-1])
    last_only = all(p == 0 for p in pads[:-2]) and all(p.is_static for p in pads[-2:])
    if not (last_only and c_in.is_static and c_out.is_static and c_out.value <= PAD_ROW_ELEMENTS
            and lw.dtype(out) in ("float16", "bfloat16", "float32")):
        strided_copy.lower_pad(lw)
        return
    params = io_params(lw, out, "x") + [("int64_t", "rows"), ("float", "value")]
    kernel = make_kernel("pad_channels", node.op, lw.template("pad_channels"),
                         dict(ctype=lw.ctype(out), c_in=c_in.value, c_out=c_out.value,
                              before=pads[-2].value), params)
    lw.call(kernel, [lw.dst(out), lw.src(x), cexpr(elements(lw.shape(x)[:-1])),
                     float_literal(node.attrs["value"])])
