"""The cuda backend (a100: sm_80, h100/h200: sm_90a): tensors stay in the model's dtype on the
device (fp16/bf16 storage, float32 math inside every kernel), inputs and outputs are device
pointers in that dtype, and run() enqueues on the caller's stream.

The table below is the whole mapping from ops to kernels. GEMM-shaped ops go through CUTLASS
(codegen/cuda_gemm.py), rows, windows and attention through own templates (codegen/cuda_ops.py);
elementwise and data-movement ops take the rows every backend shares (backends/shared.py: the
lowerings of cpu_elementwise.py and cpu_data.py), rendered into the cuda templates named in
TEMPLATES, which take the same context.
"""

from __future__ import annotations

from ait_build.backends import shared
from ait_build.codegen import cpu_data, cuda_gemm, cuda_ops
from ait_build.codegen.cexpr import elements
from ait_build.ir.dims import Dim

MODEL_TEMPLATE = "cuda/model.cpp.j2"
SUPPORT_FILES = {  # generated path -> template
    "src/ait_common.h": "common/ait_common.h.j2",
    "src/ait_runtime.h": "common/ait_runtime.h.j2",
    "src/ait_cuda.h": "cuda/ait_cuda.h.j2",
    "src/ait_cuda_runtime.h": "cuda/ait_cuda_runtime.h.j2",
}
# the cuda templates of the lowerings shared with the cpu backend (codegen/kernel.template_for)
TEMPLATES = {
    "elementwise": "cuda/elementwise.cu.j2",
    "copy": "cuda/copy.cu.j2",
    "gather": "cuda/gather.cu.j2",
    "softmax": "cuda/softmax.cu.j2",
    "pool2d": "cuda/pool2d.cu.j2",
    "global_avg_pool": "cuda/global_avg_pool.cu.j2",
}

# storage types: the model's own dtype, also at the edges (no conversion kernels)
CTYPE = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16",
         "int32": "int32_t", "int64": "int64_t", "bool": "uint8_t"}
IO_CTYPE = CTYPE
SIZEOF = {"__half": 2, "__nv_bfloat16": 2}
STEP_TIMING = True  # the library exports num_steps() and time_steps() (model.cpp.j2)

def lower_embedding(lw) -> None:
    """The table in the model's dtype, gathered by row (ids are checked on the device)."""
    node = lw.node
    table = (Dim.of(node.attrs["num_embeddings"]), Dim.of(node.attrs["embedding_dim"]))
    weight = lw.weight("weight", dtype=lw.dtype(node.output))
    cpu_data.gather(lw, node.output, weight, table, lw.ctype(node.output), node.inputs[0], 0,
                    negative=False)


def lower_parameter(lw) -> None:
    """A weight used as a tensor, stored in the model's dtype: read in place, copied only when it
    is a model output."""
    out = lw.node.output
    var = lw.weight("value", dtype=lw.dtype(out))
    if out not in lw.plan.graph.outputs:
        lw.plan.add_value(out, lw.ctype(out), var, "view", const=True)
        return
    n = elements(lw.shape(out))
    cpu_data.copy(lw, lw.dst(out), var, lw.ctype(out), [n], [1], [1])


LOWER = {
    **shared.ELEMENTWISE,  # elementwise ops, fused programs, batch_norm (backends/shared.py)
    # GEMM-shaped, with the fused epilogue (CUTLASS sm80 tensor ops)
    "linear": cuda_gemm.lower_linear,
    "matmul": cuda_gemm.lower_matmul,
    "bmm": cuda_gemm.lower_matmul,
    "conv2d": cuda_gemm.lower_conv2d,
    "multi_head_attention": cuda_ops.lower_attention,
    # rows and windows
    "layer_norm": cuda_ops.lower_layer_norm,
    **shared.ROWS_AND_WINDOWS,  # softmax and pools (backends/shared.py)
    **shared.DATA_MOVEMENT,  # views, strided copies, gather (backends/shared.py)
    **shared.GENERATE,  # constant and iota (backends/shared.py)
    "pad": cuda_ops.lower_pad,  # the last dim alone: one pass; else the shared fill + copy
    "embedding": lower_embedding,
    "parameter": lower_parameter,
}


def lower_inputs(plan) -> None:
    """Inputs are device buffers in the model's dtype: read in place."""
    for i, name in enumerate(plan.graph.inputs):
        ctype = CTYPE[plan.graph.tensors[name].dtype]
        plan.add_value(name, ctype, f"static_cast<const {ctype}*>(in[{i}])", "input", const=True)


def lower_outputs(plan) -> None:
    """Outputs not written in place (views, weights, inputs) are copied into the user's buffer."""
    from ait_build.codegen.plan import Lowerer
    lw = Lowerer(plan, None)
    for i, name in enumerate(plan.graph.outputs):
        value = plan.values[name]
        if value.kind == "output":
            continue
        t = plan.graph.tensors[name]
        ctype = CTYPE[t.dtype]
        n = elements(t.shape)
        cpu_data.copy(lw, f"static_cast<{ctype}*>(out[{i}])", lw.src(name), ctype, [n], [1],
                      [1], "output_copy")
