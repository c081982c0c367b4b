"""The cpu backend: C++17 + OpenMP kernels, GEMMs through OpenBLAS (scipy-openblas32), float32
compute for every float dtype (float16/bfloat16 models take and return their own dtype; the
conversion happens at the model's edges).

The table below is the whole mapping from ops to kernels (with the rows every backend shares,
from backends/shared.py); each lowering lives with its kind in
ait_build/codegen/cpu_*.py.
"""

from __future__ import annotations

from ait_build.backends import shared
from ait_build.codegen import cpu_data, cpu_gemm, cpu_norm
from ait_build.codegen.cpu_elementwise import Operand, convert
from ait_build.codegen.storage import CTYPE, IO_CTYPE

MODEL_TEMPLATE = "cpu/model.cpp.j2"
SUPPORT_FILES = {  # generated path -> template
    "src/ait_common.h": "common/ait_common.h.j2",
    "src/ait_runtime.h": "common/ait_runtime.h.j2",
    "src/ait_cpu.h": "cpu/ait_cpu.h.j2",
}

LOWER = {
    **shared.ELEMENTWISE,  # elementwise ops, fused programs, batch_norm (backends/shared.py)
    # GEMM-shaped, with the fused epilogue (gemm / conv2d / depthwise_conv2d / attention)
    "linear": cpu_gemm.lower_linear,
    "matmul": cpu_gemm.lower_matmul,
    "bmm": cpu_gemm.lower_matmul,
    "conv2d": cpu_gemm.lower_conv2d,
    "multi_head_attention": cpu_gemm.lower_attention,
    # rows and windows
    "layer_norm": cpu_norm.lower_layer_norm,
    **shared.ROWS_AND_WINDOWS,  # softmax and pools (backends/shared.py)
    **shared.DATA_MOVEMENT,  # views, strided copies, gather (backends/shared.py)
    **shared.GENERATE,  # constant and iota (backends/shared.py)
    "embedding": cpu_data.lower_embedding,
    "parameter": cpu_data.lower_parameter,
}


def lower_inputs(plan) -> None:
    """Inputs in float32 (or an int type) are read in place; float16/bfloat16 ones are widened."""
    from ait_build.codegen.plan import Lowerer
    lw = Lowerer(plan, None)
    for i, name in enumerate(plan.graph.inputs):
        t = plan.graph.tensors[name]
        io, ctype = IO_CTYPE[t.dtype], CTYPE[t.dtype]
        src = f"static_cast<const {io}*>(in[{i}])"
        if io == ctype:
            plan.add_value(name, ctype, src, "input", const=True)
            continue
        dst = plan.add_slot(name, ctype, t.shape)
        convert(lw, Operand(dst.var, ctype, t.shape), Operand(src, io, t.shape), t.dtype, "float32")


def lower_outputs(plan) -> None:
    """Outputs not written in place (narrower dtypes, views, weights) are converted or copied."""
    from ait_build.codegen.plan import Lowerer
    lw = Lowerer(plan, None)
    for i, name in enumerate(plan.graph.outputs):
        value = plan.use(name)  # live until its conversion
        if value.kind == "output":
            continue
        t = plan.graph.tensors[name]
        io = IO_CTYPE[t.dtype]
        dst = Operand(f"static_cast<{io}*>(out[{i}])", io, t.shape)
        convert(lw, dst, Operand(value.var, value.ctype, t.shape), "float32", t.dtype)
