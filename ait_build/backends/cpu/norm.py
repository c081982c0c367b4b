"""cpu lowering of layer_norm (+residual): a row kernel with `omp simd` reductions."""

from __future__ import annotations

from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.elementwise import float_literal
from ait_build.codegen.kernel import make_kernel


def lower_layer_norm(lw) -> None:
    """layer_norm, and rms_norm on the same template (no centering, no bias)."""
    node = lw.node
    x, out = node.inputs[0], node.output
    has_res = len(node.inputs) > 1
    affine = bool(node.attrs["affine"])
    center = node.op == "layer_norm"
    roles = (["weight"] + (["bias"] if center else [])) if affine else []
    c = lw.shape(x)[-1]
    context = dict(has_residual=has_res, affine=affine, center=center,
                   value="(xr[c] + rr[c])" if has_res else "xr[c]")
    params = [("float*", "out"), ("const float*", "x")]
    params += [("const float*", "res")] if has_res else []
    params += [("const float*", role) for role in roles]
    params += [("int64_t", "rows"), ("int64_t", "C"), ("float", "eps")]
    kernel = make_kernel(node.op + ("_res" if has_res else ""), node.op,
                         "cpu/layer_norm.cpp.j2", context, params)
    args = [lw.dst(out), lw.src(x)] + ([lw.src(node.inputs[1])] if has_res else [])
    args += [lw.weight(role) for role in roles]
    args += [cexpr(elements(lw.shape(x)[:-1])), cexpr(c), float_literal(node.attrs["eps"])]
    lw.call(kernel, args)
