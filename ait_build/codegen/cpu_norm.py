"""Lowering of row-wise and window ops: layer_norm (+residual), softmax, max/avg pooling and
global average pooling. Sizes are run-time arguments, so one kernel serves every layer of a kind;
only what changes the loop structure (window geometry, residual, affine) is compiled in."""

from __future__ import annotations

from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.cpu_elementwise import float_literal
from ait_build.codegen.cpu_gemm import window_attrs
from ait_build.codegen.kernel import io_params, make_kernel, template_for
from ait_build.ir.dims import Dim
from ait_build.ops.registry import norm_axis


def lower_layer_norm(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    has_res = len(node.inputs) > 1
    affine = bool(node.attrs["affine"])
    c = lw.shape(x)[-1]
    context = dict(has_residual=has_res, affine=affine,
                   value="(xr[c] + rr[c])" if has_res else "xr[c]")
    params = [("float*", "out"), ("const float*", "x")]
    params += [("const float*", "res")] if has_res else []
    params += [("const float*", "weight"), ("const float*", "bias")] if affine else []
    params += [("int64_t", "rows"), ("int64_t", "C"), ("float", "eps")]
    kernel = make_kernel("layer_norm" + ("_res" if has_res else ""), node.op,
                         "cpu/layer_norm.cpp.j2", context, params)
    args = [lw.dst(out), lw.src(x)] + ([lw.src(node.inputs[1])] if has_res else [])
    args += [lw.weight("weight"), lw.weight("bias")] if affine else []
    args += [cexpr(elements(lw.shape(x)[:-1])), cexpr(c), float_literal(node.attrs["eps"])]
    lw.call(kernel, args)


# softmax and the pools are shared with the cuda backend (backends/shared.py): the same context
# and parameters, rendered into each backend's template (kernel.template_for)

def lower_softmax(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    shape = lw.shape(x)
    axis = norm_axis(node.attrs["axis"], len(shape))
    inner = elements(shape[axis + 1:])
    params = io_params(lw, out, "x") + [("int64_t", p) for p in ("outer", "L", "inner")]
    kernel = make_kernel("softmax", node.op, template_for(lw.plan, "softmax", "cpu/softmax.cpp.j2"),
                         dict(contiguous=inner == Dim.of(1), ctype=lw.ctype(out)), params)
    lw.call(kernel, [lw.dst(out), lw.src(x), cexpr(elements(shape[:axis])), cexpr(shape[axis]),
                     cexpr(inner)])


def lower_pool(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    n, h, w, c = lw.shape(x)
    _, ho, wo, _ = lw.shape(out)
    kind = "max" if node.op == "max_pool2d" else "avg"
    context = dict(window_attrs(node.attrs), kind=kind, ctype=lw.ctype(out),
                   count_include_pad=bool(node.attrs.get("count_include_pad", True)))
    params = io_params(lw, out, "x") + [("int64_t", s) for s in ("N", "H", "W", "C", "HO", "WO")]
    kernel = make_kernel(f"{kind}_pool2d", node.op,
                         template_for(lw.plan, "pool2d", "cpu/pool2d.cpp.j2"), context, params)
    lw.call(kernel, [lw.dst(out), lw.src(x)] + [cexpr(v) for v in (n, h, w, c, ho, wo)])


def lower_global_avg_pool(lw) -> None:
    node = lw.node
    n, h, w, c = lw.shape(node.inputs[0])
    params = io_params(lw, node.output, "x") + [("int64_t", p) for p in ("N", "HW", "C")]
    kernel = make_kernel("global_avg_pool", node.op,
                         template_for(lw.plan, "global_avg_pool", "cpu/global_avg_pool.cpp.j2"),
                         dict(ctype=lw.ctype(node.output)), params)
    lw.call(kernel, [lw.dst(node.output), lw.src(node.inputs[0]), cexpr(n), cexpr(h * w),
                     cexpr(c)])
