"""cpu lowering of layer_norm (+residual): a row kernel with `omp simd` reductions."""

from __future__ import annotations

from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.elementwise import float_literal
from ait_build.codegen.kernel import make_kernel


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
