"""The cuda backend (a100: sm_80, h100/h200: sm_90a): the GPU layer (backends/gpu/, templates/
gpu/) on CUDA, with CUTLASS as its matrix engine (cutlass.py, configs.py) and CUTLASS's fused
attention on tensor cores (fmha.py). Tensors stay in the model's dtype on the device (fp16/bf16
storage, float32 math inside every kernel), inputs and outputs are device pointers in that
dtype, and run() enqueues on the caller's stream.
"""

from __future__ import annotations

from ait_build.backends import gpu
from ait_build.backends.cuda import cutlass, fmha
from ait_build.backends.cuda.toolchain import ARCH_OPTIONS, arch_flags, cuda_toolchain

# kernel kind -> template: the GPU layer's kernels as cuda renders them (each a one-line stub
# extending templates/gpu/<kind>.cu.j2: a kernel's name hashes its template's path, so the stubs
# keep cuda's kernel names), and the dispatches of the CUTLASS GEMMs and convs
TEMPLATES = {
    "elementwise": "cuda/elementwise.cu.j2",
    "copy": "cuda/copy.cu.j2",
    "gather": "cuda/gather.cu.j2",
    "gather_elements": "gpu/gather_elements.cu.j2",
    "softmax": "cuda/softmax.cu.j2",
    "pool2d": "cuda/pool2d.cu.j2",
    "global_avg_pool": "cuda/global_avg_pool.cu.j2",
    "resize2d": "gpu/resize2d.cu.j2",  # no stub: a new kind names the GPU layer's template
    "layer_norm": "cuda/layer_norm.cu.j2",
    "pad_channels": "cuda/pad_channels.cu.j2",
    "attention": "cuda/attention.cu.j2",
    "gemm_simple": "cuda/gemm_simple.cu.j2",
    "conv2d_direct": "cuda/conv2d_direct.cu.j2",
    "gemm": "cuda/gemm.cu.j2",
    "conv2d": "cuda/conv2d.cu.j2",
}
SUPPORT_FILES = {  # generated path -> template
    "src/ait_common.h": "common/ait_common.h.j2",
    "src/ait_runtime.h": "common/ait_runtime.h.j2",
    "src/ait_cuda.h": "cuda/ait_cuda.h.j2",
    "src/ait_cuda_runtime.h": "cuda/ait_cuda_runtime.h.j2",
}
# storage types: the model's own dtype, also at the edges (no conversion kernels)
CTYPE = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16",
         "int32": "int32_t", "int64": "int64_t", "bool": "uint8_t"}
SIZEOF = {"float": 4, "__half": 2, "__nv_bfloat16": 2, "int32_t": 4, "int64_t": 8, "uint8_t": 1}

BACKEND = gpu.backend(
    name="cuda",
    lower=gpu.lowerings(cutlass.CUTLASS, fmha.tensor_core_attention),
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
    device="cuda",
    render_globals={"kernel_header": "ait_cuda.h"},  # gpu/kernel.cu.j2 includes it
    profile_driver="cuda/profile.cu.j2",
)
