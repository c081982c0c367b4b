"""The rocm backend (mi250: gfx90a): the GPU layer (backends/gpu/, templates/gpu/) on HIP, with
GEMMs and implicit-GEMM convs on the matrix cores (mfma.py, templates/rocm/) and the GPU layer's
own fused attention. The GPU layer's sources are written with CUDA's runtime names;
gpu/hip_names.h, included first by the kernel and runtime headers, spells them as HIP does, and
its 32-lane warps run as the halves of a 64-lane wavefront. Tensors stay in the model's dtype on
the device (float16 or float32; HIP 5.2 has no device bfloat16 type, and mi250.yaml declares
none), inputs and outputs are device pointers, and run() enqueues on the caller's stream.

No AMD GPU is available to this project: everything here is compiled, never run (docs/targets.md
says what is verified how).
"""

from __future__ import annotations

from ait_build.backends import gpu
from ait_build.backends.base import Archs
from ait_build.backends.rocm import mfma
from ait_build.backends.rocm.toolchain import ARCH_OPTIONS, arch_flags, rocm_toolchain

# kernel kind -> template: the GPU layer's kernels as they are, and its GEMM/conv dispatches over
# the MFMA parts (mfma.PARTS)
TEMPLATES = {kind: f"gpu/{kind}.cu.j2" for kind in (
    "elementwise", "copy", "padded_copy", "gather", "softmax", "pool2d", "global_avg_pool", "layer_norm",
    "pad_channels", "attention", "gemm_simple", "conv2d_direct", "depthwise_conv2d",
    "im2col", "channel_scale", "concat_elementwise", "concat_rows", "transpose", "short_transpose",
    "stem_conv", "gemm", "conv2d", "resize2d", "gather_elements", "permute_elements", "grouped_matmul", "cumsum")}
SUPPORT_FILES = {  # generated path -> template (.j2) or plain header, copied as it is
    "src/ait_common.h": "common/include/ait_common.h",
    "src/ait_runtime.h": "common/include/ait_runtime.h",
    # the CUDA runtime names the GPU layer's templates write, as HIP spells them; the kernel and
    # runtime headers include it first (tests/codegen/test_backends.py checks that it maps every
    # name templates/gpu/ uses; AIT_CUDA_TRY and ait::cuda_fail keep their names: the layer's own)
    "src/hip_names.h": "gpu/include/hip_names.h",
    "src/ait_rocm.h": "rocm/ait_rocm.h.j2",
    "src/ait_rocm_runtime.h": "rocm/ait_rocm_runtime.h.j2",
}
CTYPE = {"float32": "float", "float16": "__half", "int32": "int32_t", "int64": "int64_t",
         "bool": "uint8_t"}
SIZEOF = {"float": 4, "__half": 2, "int32_t": 4, "int64_t": 8, "uint8_t": 1}

# the CDNA GPUs: matrix cores with the MFMA instructions mfma.py issues, 64-lane wavefronts
CDNA = ("gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")
ON_CDNA = Archs(", ".join(CDNA[:-1]) + f" or {CDNA[-1]} (CDNA)",
                lambda arch: arch.split(":")[0] in CDNA)  # gfx90a:xnack- is a gfx90a

BACKEND = gpu.backend(
    name="rocm",
    lower=gpu.lowerings(mfma.MFMA),  # attention: the GPU layer's fused kernel
    templates=TEMPLATES,
    model_template="rocm/model.cpp.j2",
    support_files=SUPPORT_FILES,
    ctypes=CTYPE,
    sizeof=SIZEOF,
    toolchain=rocm_toolchain,
    arch_flags=arch_flags,
    compile_job_memory=1 << 30,  # hipcc peaks at about 160 MB on a kernel or model.cpp (measured)
    arch_options=ARCH_OPTIONS,
    kernel_families={"gemm": mfma.FAMILIES, "conv2d": mfma.FAMILIES, "attention": ("gpu_fused",)},
    kernel_archs={family: ON_CDNA for family in mfma.FAMILIES},
    device="hip",
    render_globals={"kernel_header": "ait_rocm.h"},  # gpu/kernel.cu.j2 includes it
)
