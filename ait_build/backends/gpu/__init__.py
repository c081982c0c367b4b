"""The vendor-neutral GPU layer that the GPU backends (cuda, rocm) extend; not a backend itself.

Python side: the lowerings every GPU backend shares (edges.py: device buffers in the model's
dtype; rows.py: layer norm, channel pads; attention.py: fused attention on ordinary cores, which
a backend may replace per call with a faster kernel; gemm.py: GEMMs and convs on a backend's
`MatrixEngine`; im2col.py: the window rows of convs over few channels, for those GEMMs;
depthwise.py: depthwise convs; squeeze_excitation.py: the global average pool and the gate's
channel scale; transpose.py: permutes that swap the innermost axes; concat.py: concats along
the innermost axis) and `LOWER`, the table rows
they make. Template side: templates/gpu/, the simple kernels and the device half of the model's
run loop, written with CUDA's names, which a HIP build maps through its own small header.
"""

from __future__ import annotations

from functools import partial

from ait_build.backends import shared
from ait_build.backends.base import Backend, frozen
from ait_build.backends.gpu import concat, edges, gemm, rows, squeeze_excitation, transpose
from ait_build.backends.gpu.attention import attention_lowering
from ait_build.codegen import grouped_matmul


def lowerings(engine, tensor_core_attention=None, tensor_core_elements=None) -> dict:
    """A GPU backend's whole op -> lowering table, on its matrix engine (and its tensor-core
    attention and grouped GEMM's element types, if any)."""
    return {
        **shared.ELEMENTWISE,  # elementwise ops, fused programs, batch_norm (backends/shared.py)
        # a per-(image, channel) gate: vectors, or nothing where the 1x1 conv after it scales
        # its weights instead
        "mul": partial(squeeze_excitation.lower_mul, engine),
        **gemm.lowerings(engine),  # linear, matmul, bmm, conv2d with the fused epilogue
        "multi_head_attention": attention_lowering(tensor_core_attention),
        # a mixture of experts' rows by their groups' matrices (codegen/grouped_matmul.py)
        "grouped_matmul": partial(grouped_matmul.lower, elements=tensor_core_elements, gpu=True),
        # rows and windows
        "layer_norm": rows.lower_layer_norm,
        "rms_norm": rows.lower_layer_norm,  # the same kernel without centering or bias
        **shared.ROWS_AND_WINDOWS,  # softmax and pools (backends/shared.py)
        "global_avg_pool": squeeze_excitation.lower_global_avg_pool,  # ranges split in scratch
        **shared.DATA_MOVEMENT,  # views, strided copies, gather (backends/shared.py)
        "concat": concat.lower_concat,  # along the innermost axis: one kernel (concat.py)
        "permute": transpose.lower_permute,  # innermost axes swapped: tiles (transpose.py)
        "transpose": transpose.lower_permute,
        "strided_copy": transpose.lower_strided_copy,  # a fused chain; tiles where it transposes
        **shared.GENERATE,  # constant and iota (backends/shared.py)
        "pad": rows.lower_pad,  # the last dim alone: rows in registers; else the padded copy
        "embedding": edges.lower_embedding,
        "parameter": edges.lower_parameter,
    }


# weights a lowering does not type (layer norm's, batch norm's folded scales) are float32, as
# the kernels compute; GEMM operands and biases ask for the model's dtype
WEIGHT_STORAGE = {"float16": "float32", "bfloat16": "float32"}


def backend(*, ctypes: dict, **fields) -> Backend:
    """A GPU backend: tensors in the model's dtype on the device, inputs and outputs too (the
    edges convert nothing: edges.py), float32 compute, an `arch` every target names, run() timed
    per step with device events. `fields`: the rest of the Backend (its tables are frozen
    here)."""
    tables = {k: frozen(v) if isinstance(v, dict) else v for k, v in fields.items()}
    return Backend(ctypes=frozen(ctypes), io_ctypes=frozen(ctypes), compute_dtype="float32",
                   weight_storage=frozen(WEIGHT_STORAGE), lower_inputs=edges.lower_inputs,
                   lower_outputs=edges.lower_outputs, needs_arch=True, step_timing=True, **tables)
