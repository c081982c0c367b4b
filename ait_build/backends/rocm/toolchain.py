"""The rocm backend's command lines: hipcc (ROCm's clang driver) compiling every source as HIP
for the target's `arch` (`--offload-arch=gfx90a`), position-independent with only the C API
exported; hipcc links libamdhip64 into the shared library itself (given the arch at the link
too, or it asks rocm_agent_enumerator for the GPUs of the building machine)."""

from __future__ import annotations

import re

from ait_build.errors import AitError
from ait_build.backends.toolchain import Toolchain

# always on: every source is HIP (model.cpp and build_id.cpp too), as cuda's are CUDA; HIP's
# runtime functions are [[nodiscard]], and the GPU layer drops the statuses it clears on purpose
# (cudaGetLastError() after a failure it has reported, destroys in destructors)
HIP_EXTRA_FLAGS = ("-x", "hip", "-fPIC", "-fvisibility=hidden", "-DNDEBUG", "-Wno-unused-result")
# AMD GPU architectures as clang names them: gfx90a (MI200), gfx942 (MI300), gfx1100, ...,
# with optional target features (gfx90a:xnack-)
ARCH = re.compile(r"gfx[0-9a-f]{3,4}(:[a-z-]+[+-])*")
# flags that pick an architecture, which only `arch:` may do
ARCH_OPTIONS = ("--offload-arch", "--amdgpu-target", "--cuda-gpu-arch", "-march", "-mcpu")
# hipcc picks the NVIDIA platform when it finds nvcc on PATH; ours is AMD's
ENV = (("HIP_PLATFORM", "amd"),)


def arch_flags(arch: str) -> tuple:
    """hipcc's flag for `arch`: one code object for that GPU (gfx90a -> --offload-arch=gfx90a)."""
    if not ARCH.fullmatch(arch or ""):
        raise AitError(f"arch '{arch}' is not an AMD GPU architecture (gfx90a, gfx942, ...)")
    return (f"--offload-arch={arch}",)


def rocm_toolchain(target) -> Toolchain:
    own = tuple(target.flags) + arch_flags(target.arch)
    extra = () if "-x" in own else HIP_EXTRA_FLAGS[:2]
    flags = own + extra + tuple(f for f in HIP_EXTRA_FLAGS[2:] if f not in own)
    return Toolchain(target=target.name, cxx=target.cxx, flags=flags, include_dirs=(),
                     defines=(), link_flags=tuple(target.link_flags) + arch_flags(target.arch),
                     libs=(), lib_dirs=(),
                     rpath=(), libraries=(), object_suffix=".o", env=ENV)
