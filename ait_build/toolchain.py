"""Compiler command lines per target: which compiler, which flags, where the BLAS lives.

SCons and the codegen tests both build from these lines, so a library compiled either way is the
same. A missing compiler or BLAS raises one AitError that names what to install.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from ait_build.codegen.render import templates_dir
from ait_build.errors import AitError

# what to install when a compiler is missing, by compiler name
INSTALL_HINTS = {
    "g++": "install GCC's C++ compiler (Debian/Ubuntu: apt-get install g++)",
    "c++": "install a C++ compiler (Debian/Ubuntu: apt-get install g++)",
    "clang++": "install clang (Debian/Ubuntu: apt-get install clang)",
    "nvcc": "install the CUDA toolkit (nvcc) and put it on PATH",
    "hipcc": "install ROCm's hipcc (Debian/Ubuntu: apt-get install hipcc libamdhip64-dev)",
}

# target.device.simd (float32 lanes) -> instruction-set flags, per compiler machine prefix. The
# target file says how wide the vectors are; the compiler's own machine says which ISA that is.
SIMD_FLAGS = {
    ("x86_64", 4): (),
    ("x86_64", 8): ("-mavx2", "-mfma", "-mf16c"),
    ("x86_64", 16): ("-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512dq", "-mfma", "-mf16c"),
    ("aarch64", 4): (),
}

# always on for cpu: only the C API is exported (kernels stay private to each library), no
# asserts; no errno or FP-exception flags from math, which is what lets GCC vectorize the
# branch-free exp/erf/tanh selects in ait_cpu.h (values are unchanged: no -ffast-math)
CPU_EXTRA_FLAGS = ("-fvisibility=hidden", "-fvisibility-inlines-hidden", "-DNDEBUG",
                   "-fno-math-errno", "-fno-trapping-math")


# always on for cuda: every source is CUDA (model.cpp too), position-independent and with only
# the C API exported, no device asserts (they serialize wgmma: DESIGN.md). nvcc links the CUDA
# runtime statically by default, so a library needs no libcudart on the library path.
CUDA_EXTRA_FLAGS = ("-x", "cu", "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden",
                    "-DNDEBUG")


@dataclass(frozen=True)
class Blas:
    """Where the cblas header and library are, and the (prefixed) symbols the kernels call."""

    include_dir: str
    lib_dir: str
    lib: str  # -l name
    defines: tuple  # -D macros naming the symbols, so sources do not hard-code a BLAS


@dataclass(frozen=True)
class Toolchain:
    target: str
    cxx: str
    flags: tuple  # compile flags (also written to the manifest: no paths in them)
    include_dirs: tuple
    defines: tuple
    link_flags: tuple
    libs: tuple  # -l names
    lib_dirs: tuple
    rpath: tuple
    host_prefix: tuple = ()  # how host-compiler-only flags are passed (nvcc: -Xcompiler)
    libraries: tuple = ()  # (name, version) of the header/link libraries built against

    def compile_command(self, source: str, obj: str, include_dirs=(), prefix_map: str = "") -> list:
        """Compile one source; `prefix_map` (the build folder) keeps paths out of the object."""
        cmd = [self.cxx, *self.flags, *(f"-D{d}" for d in self.defines)]
        cmd += [f"-I{d}" for d in tuple(include_dirs) + self.include_dirs]
        if prefix_map:
            cmd += [*self.host_prefix, f"-ffile-prefix-map={prefix_map}=."]
        return cmd + ["-c", source, "-o", obj]

    def link_command(self, objects, library: str) -> list:
        return self._link(["-shared", *self.link_flags, "-o", library, *objects])

    def program_command(self, objects, program: str) -> list:
        """A program (a profiling harness) from objects, with the libraries a model links."""
        return self._link(["-o", program, *objects])

    def _link(self, head: list) -> list:
        cmd = [self.cxx, *head]
        cmd += [f"-L{d}" for d in self.lib_dirs] + [f"-Wl,-rpath,{d}" for d in self.rpath]
        return cmd + [f"-l{lib}" for lib in self.libs]

    def version(self) -> str:
        return compiler_version(self.cxx)

    def manifest(self) -> dict:
        """What manifest.json records: the exact versions of the compiler (and of nvcc's host
        compiler) and libraries; no include or library paths (those differ per machine)."""
        out = {"cxx": self.cxx, "flags": list(self.flags), "version": self.version(),
               "libraries": dict(self.libraries)}
        if self.host_prefix:
            host = host_compiler(self.flags)
            out["host"] = {"cxx": host, "version": compiler_version(host)}
        return out


def require_compiler(cxx: str, target_name: str) -> str:
    path = shutil.which(cxx)
    if path is None:
        hint = INSTALL_HINTS.get(os.path.basename(cxx), f"install '{cxx}' and put it on PATH")
        raise AitError(f"target '{target_name}' compiles with '{cxx}', which is not on PATH: {hint}")
    return path


# compilers whose exact version only `--version` tells (nvcc has no -dumpfullversion): the
# pattern that finds it there ("Cuda compilation tools, release 13.0, V13.0.88"; "HIP version:
# 5.2.21153-...")
VERSION_PATTERNS = {"nvcc": r"release [\d.]+, V(\d+(?:\.\d+)+)", "hipcc": r"HIP version: (\S+)"}


@functools.lru_cache(maxsize=None)
def compiler_version(cxx: str) -> str:
    """The compiler's exact version ('13.0.88', '12.2.0'), or 'unknown' when it does not say."""
    pattern = VERSION_PATTERNS.get(os.path.basename(cxx))
    cmd = [cxx, "--version"] if pattern else [cxx, "-dumpfullversion", "-dumpversion"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise AitError(f"cannot run '{cxx}': {exc}") from None
    if pattern:
        found = re.search(pattern, out.stdout)
        return found.group(1) if found else "unknown"
    return out.stdout.strip() or "unknown"


def host_compiler(flags) -> str:
    """nvcc's host compiler: the -ccbin given in the target's flags, else g++ on PATH (nvcc's
    default on Linux)."""
    flags = list(flags)
    for i, flag in enumerate(flags):
        if flag in ("-ccbin", "--compiler-bindir") and i + 1 < len(flags):
            return flags[i + 1]
        if flag.startswith(("-ccbin=", "--compiler-bindir=")):
            return flag.split("=", 1)[1]
    return "g++"


def header_version(path: str, prefix: str) -> str:
    """'MAJOR.MINOR.PATCH' from `#define <prefix>_MAJOR 4`-style lines of a header."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return "unknown"
    parts = [re.search(rf"#define\s+{prefix}_{part}\s+(\d+)", text) for part in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(p.group(1) for p in parts) if all(parts) else "unknown"


def package_version(name: str) -> str:
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.lru_cache(maxsize=None)
def compiler_machine(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "-dumpmachine"], capture_output=True, text=True, timeout=60)
    except OSError:
        return ""
    return out.stdout.strip()


@functools.lru_cache(maxsize=None)
def find_openblas() -> Blas:
    """OpenBLAS from the scipy-openblas32 wheel: headers, library and its `scipy_` symbol prefix."""
    try:
        import scipy_openblas32 as ob
    except ImportError:
        raise AitError("the cpu target needs OpenBLAS from the scipy-openblas32 wheel: "
                       "pip install scipy-openblas32") from None
    include_dir, lib_dir = ob.get_include_dir(), ob.get_lib_dir()
    if not os.path.isfile(os.path.join(include_dir, "cblas.h")):
        raise AitError(f"scipy-openblas32 has no cblas.h in {include_dir}; reinstall it: "
                       "pip install --force-reinstall scipy-openblas32")
    lib = ob.get_library()  # 'scipy_openblas'
    if not any(name.startswith(f"lib{lib}.") for name in os.listdir(lib_dir)):
        raise AitError(f"scipy-openblas32 has no lib{lib} in {lib_dir}; reinstall it: "
                       "pip install --force-reinstall scipy-openblas32")
    prefix = "scipy_"
    defines = (f"AIT_SGEMM={prefix}cblas_sgemm",
               f"AIT_BLAS_SET_THREADS={prefix}openblas_set_num_threads")
    return Blas(include_dir, lib_dir, lib, defines)


@functools.lru_cache(maxsize=None)
def find_cutlass(target_name: str = "") -> tuple:
    """CUTLASS's include folders (include/ and tools/util/include/): from $CUTLASS_PATH (a
    CUTLASS checkout) when set, else from the nvidia-cutlass wheel's cutlass_library/source."""
    root = os.environ.get("CUTLASS_PATH", "")
    where = f"CUTLASS_PATH={root}"
    if not root:
        try:
            import cutlass_library
        except ImportError:
            raise AitError(f"target '{target_name}' needs the CUTLASS headers: pip install "
                           "nvidia-cutlass (or set CUTLASS_PATH to a CUTLASS checkout)") from None
        root = os.path.join(os.path.dirname(cutlass_library.__file__), "source")
        where = "the nvidia-cutlass wheel"
    # the attention kernels come from examples 41 (kernel_forward.h) and 88 (Hopper FMHA); our
    # empty curand_kernel.h
    # stands in for the toolkit's, which that header includes but never uses (dropout only)
    dirs = (os.path.join(root, "include"), os.path.join(root, "tools", "util", "include"),
            os.path.join(root, "examples", "41_fused_multi_head_attention"),
            os.path.join(root, "examples", "88_hopper_fmha"),
            os.path.join(templates_dir(), "cuda", "include"))
    if not os.path.isfile(os.path.join(dirs[0], "cutlass", "cutlass.h")):
        raise AitError(f"no cutlass/cutlass.h under {dirs[0]} ({where}); reinstall nvidia-cutlass "
                       "or point CUTLASS_PATH at a CUTLASS checkout")
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


def cuda_toolchain(target) -> Toolchain:
    flags = tuple(target.flags) + tuple(f for f in CUDA_EXTRA_FLAGS
                                        if f == "-Xcompiler" or f not in target.flags)
    include_dirs = find_cutlass(target.name)
    cutlass = header_version(os.path.join(include_dirs[0], "cutlass", "version.h"), "CUTLASS")
    return Toolchain(target=target.name, cxx=target.cxx, flags=flags,
                     include_dirs=include_dirs, defines=(),
                     link_flags=tuple(target.link_flags), libs=(),
                     lib_dirs=nvcc_wheel_lib_dirs(target.cxx), rpath=(),
                     host_prefix=("-Xcompiler",), libraries=(("cutlass", cutlass),))


def simd_flags(target, cxx: str) -> tuple:
    lanes = target.fact("simd")
    if not lanes:
        return ()
    machine = compiler_machine(cxx).split("-")[0]
    flags = SIMD_FLAGS.get((machine, int(lanes)))
    if flags is None:
        raise AitError(f"target '{target.name}' asks for {lanes}-lane float32 vectors, which "
                       f"'{cxx}' ({machine or 'unknown machine'}) cannot target; fix device.simd")
    return flags


def toolchain_for(target, check: bool = True) -> Toolchain:
    """The command lines for `target` (a spec.target.Target). `check` verifies the compiler and
    the BLAS exist, raising one AitError that says what to install."""
    if check:
        require_compiler(target.cxx, target.name)
    if target.backend == "cuda":
        return cuda_toolchain(target)
    if target.backend != "cpu":
        return Toolchain(target.name, target.cxx, tuple(target.flags), (), (), tuple(target.link_flags),
                         (), (), ())
    blas = find_openblas()
    flags = tuple(target.flags) + simd_flags(target, target.cxx) + CPU_EXTRA_FLAGS
    return Toolchain(target=target.name, cxx=target.cxx, flags=flags,
                     include_dirs=(blas.include_dir,), defines=blas.defines,
                     link_flags=tuple(target.link_flags), libs=(blas.lib,),
                     lib_dirs=(blas.lib_dir,), rpath=(blas.lib_dir,),
                     libraries=(("scipy-openblas32", package_version("scipy-openblas32")),))
