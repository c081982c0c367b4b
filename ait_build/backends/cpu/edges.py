"""The cpu library's edges: the caller's buffers are host memory in the model's dtype; inside,
every float is float32. Float32 and integer inputs are read in place, float16/bfloat16 ones are
widened into the workspace, and outputs not written in place are narrowed or copied out."""

from __future__ import annotations

from ait_build.codegen.elementwise import Operand, elementwise
from ait_build.codegen.plan import Lowerer


def convert(lw, out: Operand, src: Operand, src_dtype: str, dst_dtype: str) -> None:
    """Model-edge conversion between the user's dtype and float32 storage (or a plain copy)."""
    if src.ctype == "uint16_t":
        fn = "ait::f16_to_f32" if src_dtype == "float16" else "ait::bf16_to_f32"
        expr = f"{fn}(v0)"
    elif out.ctype == "uint16_t":
        fn = "ait::f32_to_f16" if dst_dtype == "float16" else "ait::f32_to_bf16"
        expr = f"{fn}(v0)"
    else:
        expr = "v0"
    elementwise(lw, "convert", out, [src], expr)


def lower_inputs(plan) -> None:
    """Inputs in float32 (or an int type) are read in place; float16/bfloat16 ones are widened."""
    lw = Lowerer(plan, None)
    for i, name in enumerate(plan.graph.inputs):
        t = plan.graph.tensors[name]
        io, ctype = plan.io_ctypes[t.dtype], plan.ctypes[t.dtype]
        src = f"static_cast<const {io}*>(in[{i}])"
        if io == ctype:
            plan.add_value(name, ctype, src, "input", const=True)
            continue
        dst = plan.add_slot(name, ctype, t.shape)
        convert(lw, Operand(dst.var, ctype, t.shape), Operand(src, io, t.shape), t.dtype, "float32")


def lower_outputs(plan) -> None:
    """Outputs not written in place (narrower dtypes, views, weights) are converted or copied."""
    lw = Lowerer(plan, None)
    for i, name in enumerate(plan.graph.outputs):
        value = plan.use(name)  # live until its conversion
        if value.kind == "output":
            continue
        t = plan.graph.tensors[name]
        io = plan.io_ctypes[t.dtype]
        dst = Operand(f"static_cast<{io}*>(out[{i}])", io, t.shape)
        convert(lw, dst, Operand(value.var, value.ctype, t.shape), "float32", t.dtype)
