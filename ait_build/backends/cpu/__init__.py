"""The cpu backend: C++17 + OpenMP kernels, GEMMs through the BLAS the target's kernels.gemm names
(OpenBLAS from scipy-openblas32, MKL, or `auto`: MKL where installed; toolchain.py), float32
compute for every float dtype (float16/bfloat16 models take and return their own dtype; the
conversion happens at the model's edges, edges.py).

LOWER is the whole mapping from ops to kernels: the rows every backend shares
(backends/shared.py, rendered into the templates named in TEMPLATES) and the cpu's own lowerings
in this package (gemm.py: GEMMs, convs and attention through the BLAS; grouped.py; norm.py;
lookups.py; layout.py: permutes that transpose; concat.py: concats along the innermost axis;
squeeze_excite.py: the gates of squeeze-excitation blocks).
"""

from __future__ import annotations

from ait_build.backends import shared
from ait_build.backends.base import Backend, frozen
from ait_build.backends.cpu import concat, edges, gemm, layout, lookups, norm, squeeze_excite
from ait_build.backends.cpu.toolchain import SIMD_LANES, arch_flags, cpu_toolchain, mixed_blas
from ait_build.codegen import grouped_matmul

# the templates of the lowerings every backend shares (codegen/: elementwise, data movement,
# rows and windows), by kind
TEMPLATES = {
    "elementwise": "cpu/elementwise.cpp.j2",
    "copy": "cpu/copy.cpp.j2",
    "padded_copy": "cpu/padded_copy.cpp.j2",
    "gather": "cpu/gather.cpp.j2",
    "gather_elements": "cpu/gather_elements.cpp.j2",
    "permute_elements": "cpu/permute_elements.cpp.j2",
    "grouped_matmul": "cpu/grouped_matmul.cpp.j2",
    "cumsum": "cpu/cumsum.cpp.j2",
    "softmax": "cpu/softmax.cpp.j2",
    "pool2d": "cpu/pool2d.cpp.j2",
    "global_avg_pool": "cpu/global_avg_pool.cpp.j2",
    "resize2d": "cpu/resize2d.cpp.j2",
    "concat_elementwise": "cpu/concat_elementwise.cpp.j2",
}
SUPPORT_FILES = {  # generated path -> its file under templates/ (plain C++, copied as it is)
    "src/ait_common.h": "common/include/ait_common.h",
    "src/ait_runtime.h": "common/include/ait_runtime.h",
    "src/ait_cpu.h": "cpu/include/ait_cpu.h",
    "src/ait_pool.h": "cpu/include/ait_pool.h",
    "src/ait_packed.h": "cpu/include/ait_packed.h",
    "src/ait_panel.h": "cpu/include/ait_panel.h",
}
# storage types: floats are computed and stored as float32 inside the library
CTYPE = {"float32": "float", "float16": "float", "bfloat16": "float", "int32": "int32_t",
         "int64": "int64_t", "bool": "uint8_t"}
# types of the user's input/output buffers (the model dtype for floats)
IO_CTYPE = {"float32": "float", "float16": "uint16_t", "bfloat16": "uint16_t", "int32": "int32_t",
            "int64": "int64_t", "bool": "uint8_t"}
SIZEOF = {"float": 4, "int32_t": 4, "int64_t": 8, "uint8_t": 1, "uint16_t": 2}
# weights too are float32, as the kernels compute
WEIGHT_STORAGE = {"float16": "float32", "bfloat16": "float32"}

LOWER = {
    **shared.ELEMENTWISE,  # elementwise ops, fused programs, batch_norm (backends/shared.py)
    "mul": squeeze_excite.lower_mul,  # nothing where a 1x1 conv scales its rows by a gate
    # GEMM-shaped, with the fused epilogue (gemm / conv2d / depthwise_conv2d / attention)
    "linear": gemm.lower_linear,
    "matmul": gemm.lower_matmul,
    "bmm": gemm.lower_matmul,
    "conv2d": squeeze_excite.lower_conv2d,  # gemm.lower_conv2d, but a gate's two convs: one kernel
    "multi_head_attention": gemm.lower_attention,
    "grouped_matmul": grouped_matmul.lower,  # a BLAS GEMM a group (codegen/grouped_matmul.py)
    # rows and windows
    "layer_norm": norm.lower_layer_norm,
    "rms_norm": norm.lower_layer_norm,
    **shared.ROWS_AND_WINDOWS,  # softmax and pools (backends/shared.py)
    "global_avg_pool": squeeze_excite.lower_global_avg_pool,  # nothing where a gate's kernel pools
    **shared.DATA_MOVEMENT,  # views, strided copies, gather (backends/shared.py)
    "permute": layout.lower_permute,  # innermost axes swapped: tiles (layout.py)
    "transpose": layout.lower_permute,
    "concat": concat.lower_concat,  # along the innermost axis: whole output rows (concat.py)
    "strided_copy": layout.lower_strided_copy,  # a fused chain; tiles where it transposes
    **shared.GENERATE,  # constant and iota (backends/shared.py)
    "embedding": lookups.lower_embedding,
    "parameter": lookups.lower_parameter,
}

BACKEND = Backend(
    name="cpu",
    lower=frozen(LOWER),
    templates=frozen(TEMPLATES),
    model_template="cpu/model.cpp.j2",
    support_files=frozen(SUPPORT_FILES),
    precompiled_header="cpu/include/ait_precompiled.h",  # ait_cpu.h and the intrinsics
    ctypes=frozen(CTYPE),
    io_ctypes=frozen(IO_CTYPE),
    sizeof=frozen(SIZEOF),
    compute_dtype="float32",
    weight_storage=frozen(WEIGHT_STORAGE),
    lower_inputs=edges.lower_inputs,
    lower_outputs=edges.lower_outputs,
    toolchain=cpu_toolchain,
    arch_flags=arch_flags,
    compile_job_memory=1 << 30,  # a C++ kernel file takes well under 1 GB
    arch_options=("-march",),
    kernel_families=frozen({"gemm": ("auto", "openblas", "mkl"),
                            "conv2d": ("im2col_auto", "im2col_openblas", "im2col_mkl"),
                            "attention": ("cpu_fused",)}),
    kernels_conflict=mixed_blas,
    simd_lanes=SIMD_LANES,
    device="host",
    step_timing=True,
)
