"""The cuda backend's command lines: nvcc compiling every source as CUDA for the target's `arch`,
with the CUTLASS headers (the nvidia-cutlass wheel or $CUTLASS_PATH)."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil

from ait_build.errors import AitError
from ait_build.ir.resources import data_dir
from ait_build.backends.toolchain import Toolchain, header_version

# always on for cuda: every source is CUDA (model.cpp too), position-independent and with only
# the C API exported, no device asserts (they serialize wgmma: DESIGN.md). nvcc links the CUDA
# runtime statically by default, so a library needs no libcudart on the library path.
CUDA_EXTRA_FLAGS = ("-x", "cu", "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden",
                    "-DNDEBUG")
ARCH = re.compile(r"sm_(\d+)(a?)")
# flags that pick an architecture, which only `arch:` may do
ARCH_OPTIONS = ("-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code",
                "--gpu-code")


def arch_number(arch: str) -> int:
    """sm_90a -> 90 (an arch arch_flags takes)."""
    return int(ARCH.fullmatch(arch).group(1))


def arch_flags(arch: str) -> tuple:
    """nvcc's -gencode for `arch`: sm_80 -> SASS for sm_80 plus compute_80 PTX, which newer GPUs
    compile at load time (an a100 library runs on Hopper); sm_90a -> SASS only: code using the
    architecture-specific features (wgmma, TMA) has no forward-compatible PTX."""
    found = ARCH.fullmatch(arch or "")
    if not found:
        raise AitError(f"arch '{arch}' is not a CUDA architecture (sm_80, sm_90a, ...)")
    number, specific = found.groups()
    if specific:
        return (f"-gencode=arch=compute_{number}a,code=sm_{number}a",)
    return (f"-gencode=arch=compute_{number},code=[sm_{number},compute_{number}]",)


# The CUTLASS headers: the nvidia-cutlass wheel of this version, installed without the
# dependencies of its Python package, which ait-build does not use (docs/install.md)
CUTLASS_WHEEL = "nvidia-cutlass==4.2.0.0"
CUTLASS_INSTALL = ("ait-build install-cutlass (pip install --no-deps " + CUTLASS_WHEEL
                   + "), or set CUTLASS_PATH to a CUTLASS checkout")


@functools.lru_cache(maxsize=None)
def find_cutlass(target_name: str = "") -> tuple:
    """CUTLASS's include folders (include/ and tools/util/include/): from $CUTLASS_PATH (a
    CUTLASS checkout) when set, else from the nvidia-cutlass wheel's cutlass_library/source."""
    root = os.environ.get("CUTLASS_PATH", "")
    where = f"CUTLASS_PATH={root}"
    if not root:
        # found, not imported: the headers are all we use, and the wheel's Python package
        # imports dependencies that `ait-build install-cutlass` leaves out
        spec = importlib.util.find_spec("cutlass_library")
        if spec is None or not spec.submodule_search_locations:
            raise AitError(f"target '{target_name}' needs the CUTLASS headers: {CUTLASS_INSTALL}")
        root = os.path.join(list(spec.submodule_search_locations)[0], "source")
        where = "the nvidia-cutlass wheel"
    # the attention kernels come from examples 41 (kernel_forward.h) and 88 (Hopper FMHA); our
    # empty curand_kernel.h stands in for the toolkit's, which that header includes but never
    # uses (dropout only)
    dirs = (os.path.join(root, "include"), os.path.join(root, "tools", "util", "include"),
            os.path.join(root, "examples", "41_fused_multi_head_attention"),
            os.path.join(root, "examples", "88_hopper_fmha"),
            os.path.join(data_dir("templates"), "cuda", "include"))
    if not os.path.isfile(os.path.join(dirs[0], "cutlass", "cutlass.h")):
        raise AitError(f"no cutlass/cutlass.h under {dirs[0]} ({where}): {CUTLASS_INSTALL}")
    if not os.path.isfile(os.path.join(dirs[2], "kernel_forward.h")):
        raise AitError(f"no examples/41_fused_multi_head_attention/kernel_forward.h under {root} "
                       f"({where}); the cuda attention kernel needs CUTLASS's examples folder")
    return dirs


def nvcc_wheel_lib_dirs(cxx: str) -> tuple:
    """nvcc from NVIDIA's pip wheels (site-packages/nvidia/cu13/bin/nvcc) finds the static CUDA
    runtime it links by default (libcudart_static.a, libcudadevrt.a) in ../lib, which its
    nvcc.profile does not search (it names lib64, as the toolkit's layout has): that folder, for
    -L. Empty for a toolkit install."""
    path = shutil.which(cxx)
    if path is None:
        return ()
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(path))), "lib")
    if os.path.isfile(os.path.join(lib, "libcudart_static.a")) and not os.path.isdir(lib + "64"):
        return (lib,)
    return ()


def dependent_launch_defines(target) -> tuple:
    """capabilities.dependent_launch: every kernel waits for the previous one in
    ait::await_previous_kernels() and launches as a programmatic dependent (gpu/ait_gpu.h.j2;
    CUTLASS's kernels through cuda/_after_previous.j2)."""
    return ("AIT_DEPENDENT_LAUNCH=1",) if target.cap("dependent_launch") else ()


def cuda_toolchain(target) -> Toolchain:
    own = tuple(target.flags) + arch_flags(target.arch)
    flags = own + tuple(f for f in CUDA_EXTRA_FLAGS if f == "-Xcompiler" or f not in own)
    include_dirs = find_cutlass(target.name)
    cutlass = header_version(os.path.join(include_dirs[0], "cutlass", "version.h"), "CUTLASS")
    return Toolchain(target=target.name, cxx=target.cxx, flags=flags,
                     include_dirs=include_dirs, defines=dependent_launch_defines(target),
                     link_flags=tuple(target.link_flags), libs=(),
                     lib_dirs=nvcc_wheel_lib_dirs(target.cxx), rpath=(),
                     host_prefix=("-Xcompiler",), libraries=(("cutlass", cutlass),),
                     object_suffix=".o")
