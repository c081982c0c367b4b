"""Lowering of row-wise and window ops on any backend: softmax, max/avg pooling, global average
pooling and running sums, rendered into each backend's `softmax`, `pool2d`, `global_avg_pool`
and `cumsum` templates (the same context and parameters everywhere). Sizes are run-time
arguments, so one kernel serves every layer of a kind; only what changes the loop structure
(window geometry, a sum's direction) is compiled in."""

from __future__ import annotations

from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.kernel import io_params, make_kernel
from ait_build.codegen.op_geometry import window_attrs
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import FLOAT_DTYPES
from ait_build.ops.opdef import norm_axis


def lower_softmax(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    shape = lw.shape(x)
    axis = norm_axis(node.attrs["axis"], len(shape))
    inner = elements(shape[axis + 1:])
    params = io_params(lw, out, "x") + [("int64_t", p) for p in ("outer", "L", "inner")]
    kernel = make_kernel("softmax", node.op, lw.template("softmax"),
                         dict(contiguous=inner == Dim.of(1), ctype=lw.ctype(out)), params)
    lw.call(kernel, [lw.dst(out), lw.src(x), cexpr(elements(shape[:axis])), cexpr(shape[axis]),
                     cexpr(inner)])


def lower_pool(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    n, h, w, c = lw.shape(x)
    _, ho, wo, _ = lw.shape(out)
    kind = "max" if node.op == "max_pool2d" else "avg"
    # a ceil_mode pool's larger HO/WO is all the kernel needs (windows skip what lies past the
    # input); its partial windows divide by the cells they cover (the op has no padding then)
    count_pad = node.attrs.get("count_include_pad", True) and not node.attrs.get("ceil_mode")
    context = dict(window_attrs(node.attrs), kind=kind, ctype=lw.ctype(out),
                   count_include_pad=bool(count_pad))
    params = io_params(lw, out, "x") + [("int64_t", s) for s in ("N", "H", "W", "C", "HO", "WO")]
    kernel = make_kernel(f"{kind}_pool2d", node.op,
                         lw.template("pool2d"), context, params)
    lw.call(kernel, [lw.dst(out), lw.src(x)] + [cexpr(v) for v in (n, h, w, c, ho, wo)])


def lower_global_avg_pool(lw) -> None:
    node = lw.node
    n, h, w, c = lw.shape(node.inputs[0])
    params = io_params(lw, node.output, "x") + [("int64_t", p) for p in ("N", "HW", "C")]
    kernel = make_kernel("global_avg_pool", node.op,
                         lw.template("global_avg_pool"),
                         dict(ctype=lw.ctype(node.output)), params)
    lw.call(kernel, [lw.dst(node.output), lw.src(node.inputs[0]), cexpr(n), cexpr(h * w),
                     cexpr(c)])


def lower_cumsum(lw) -> None:
    """x [outer, L, inner] summed along L: float types in float32, integers in int64."""
    node = lw.node
    x, out = node.inputs[0], node.output
    shape = lw.shape(x)
    axis = norm_axis(node.attrs["axis"], len(shape))
    acc = "float" if lw.dtype(out) in FLOAT_DTYPES else "int64_t"
    params = io_params(lw, out, "x") + [("int64_t", p) for p in ("outer", "L", "inner")]
    kernel = make_kernel("cumsum", node.op, lw.template("cumsum"),
                         dict(ctype=lw.ctype(out), acc=acc, exclusive=bool(node.attrs["exclusive"]),
                              reverse=bool(node.attrs["reverse"])), params)
    lw.call(kernel, [lw.dst(out), lw.src(x), cexpr(elements(shape[:axis])), cexpr(shape[axis]),
                     cexpr(elements(shape[axis + 1:]))])
