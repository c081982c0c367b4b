"""The cuda backend (a100: sm_80, h100/h200: sm_90a): the GPU layer (backends/gpu/, templates/
gpu/) on CUDA, with CUTLASS as its matrix engine (cutlass.py, configs.py) and CUTLASS's fused
attention on tensor cores (fmha.py). Tensors stay in the model's dtype on the device (fp16/bf16
storage, float32 math inside every kernel), inputs and outputs are device pointers in that
dtype, and run() enqueues on the caller's stream.
"""

from __future__ import annotations

from ait_build.backends import gpu
from ait_build.backends.base import Archs
from ait_build.backends.cuda import cutlass, fmha, grouped
from ait_build.backends.cuda.toolchain import (ARCH_OPTIONS, arch_flags, arch_number,
                                              cuda_toolchain)

# kernel kind -> template: the GPU layer's kernels as they are (the kernel header comes from
# render_globals), and its GEMM/conv dispatches over the CUTLASS parts (cutlass.py)
TEMPLATES = {kind: f"gpu/{kind}.cu.j2" for kind in (
    "elementwise", "copy", "padded_copy", "gather", "gather_elements", "permute_elements", "softmax", "pool2d", "global_avg_pool",
    "resize2d", "layer_norm", "pad_channels", "attention", "gemm_simple", "conv2d_direct",
    "depthwise_conv2d", "im2col", "channel_scale", "concat_elementwise", "concat_rows", "transpose",
    "short_transpose", "stem_conv", "gemm", "conv2d", "grouped_matmul", "cumsum")}
TEMPLATES["conv2d_grouped"] = "cuda/conv2d_grouped.cu.j2"  # tensor-core grouped convs (grouped.py)
TEMPLATES["grouped_matmul_tc"] = "cuda/grouped_matmul.cu.j2"  # CUTLASS's grouped GEMM
SUPPORT_FILES = {  # generated path -> template (.j2) or plain header, copied as it is
    "src/ait_common.h": "common/include/ait_common.h",
    "src/ait_runtime.h": "common/include/ait_runtime.h",
    "src/ait_cuda.h": "cuda/ait_cuda.h.j2",
    "src/ait_cuda_runtime.h": "cuda/ait_cuda_runtime.h.j2",
}
# storage types: the model's own dtype, also at the edges (no conversion kernels)
CTYPE = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16",
         "int32": "int32_t", "int64": "int64_t", "bool": "uint8_t"}
SIZEOF = {"float": 4, "__half": 2, "__nv_bfloat16": 2, "int32_t": 4, "int64_t": 8, "uint8_t": 1}

# the 2.x-style kernels (mma.sync) need Ampere's tensor cores and run on newer GPUs; the Hopper
# ones (wgmma, TMA) exist in sm_90a code only
SM80_OR_NEWER = Archs("sm_80 or newer", lambda arch: arch_number(arch) >= 80)
SM90A = Archs("sm_90a only", lambda arch: arch == "sm_90a")
KERNEL_ARCHS = {"cutlass_sm80": SM80_OR_NEWER, "cutlass_sm90": SM90A,
                "fmha_sm80": SM80_OR_NEWER, "fmha_sm90": SM90A}

BACKEND = gpu.backend(
    name="cuda",
    # grouped convs on tensor cores (grouped.py); every other conv as the GPU layer lowers it
    lower={**gpu.lowerings(cutlass.CUTLASS, fmha.tensor_core_attention, cutlass.ELEMENT),
           "conv2d": grouped.lowering(cutlass.CUTLASS)},
    templates=TEMPLATES,
    model_template="cuda/model.cpp.j2",
    support_files=SUPPORT_FILES,
    ctypes=CTYPE,
    sizeof=SIZEOF,
    toolchain=cuda_toolchain,
    arch_flags=arch_flags,
    compile_job_memory=5 << 30,  # a CUTLASS 3.x sm90 kernel file takes 4-5 GB in nvcc (cicc)
    arch_options=ARCH_OPTIONS,
    kernel_families={"gemm": tuple(cutlass.FAMILIES), "conv2d": tuple(cutlass.FAMILIES),
                     "attention": tuple(fmha.FAMILIES)},
    kernel_archs=KERNEL_ARCHS,
    accumulate=("float32", "float16"),  # CUTLASS's tensor-core GEMMs and convs
    device="cuda",
    render_globals={"kernel_header": "ait_cuda.h"},  # gpu/kernel.cu.j2 includes it
    profile_driver="cuda/profile.cu.j2",
)
