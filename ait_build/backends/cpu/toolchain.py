"""The cpu backend's command lines: the target's compiler (g++ or clang++), the BLAS
the target's `kernels.gemm` names (OpenBLAS from the scipy-openblas32 wheel, MKL's sequential
layer from the mkl-devel wheel, or `auto`: MKL where installed), vector-width flags from
`device.simd` and `-march` from `arch`."""

from __future__ import annotations

import functools
import glob
import os
from importlib import metadata
import site
import sys
from dataclasses import dataclass

from ait_build.errors import AitError
from ait_build.backends.toolchain import Toolchain, compiler_machine, package_version

# target.device.simd (float32 lanes) -> instruction-set flags, per compiler machine prefix. The
# target file says how wide the vectors are; the compiler's own machine says which ISA that is.
SIMD_FLAGS = {
    ("x86_64", 4): (),
    ("x86_64", 8): ("-mavx2", "-mfma", "-mf16c"),
    ("x86_64", 16): ("-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512dq", "-mfma", "-mf16c"),
    ("aarch64", 4): (),
}
SIMD_LANES = tuple(sorted({lanes for _, lanes in SIMD_FLAGS}))  # on some machine

# always on for cpu: only the C API is exported (kernels stay private to each library), no
# asserts; no errno or FP-exception flags from math, which is what lets GCC vectorize the
# branch-free exp/erf/tanh selects in ait_cpu.h (values are unchanged: no -ffast-math)
CPU_EXTRA_FLAGS = ("-fvisibility=hidden", "-fvisibility-inlines-hidden", "-DNDEBUG",
                   "-fno-math-errno", "-fno-trapping-math")


@dataclass(frozen=True)
class Blas:
    """Where the cblas header and library are, and the (prefixed) symbols the kernels call."""

    include_dir: str
    lib_dir: str
    libs: tuple  # -l names
    defines: tuple  # -D macros naming the symbols, so sources do not hard-code a BLAS
    package: str  # the wheel it comes from, recorded in the manifest with its version
    runtime: tuple  # the shared libraries a built model loads at run time (absolute paths)


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
    runtime = tuple(sorted(glob.glob(os.path.join(lib_dir, f"lib{lib}.so*"))))
    return Blas(include_dir, lib_dir, (lib,), defines, "scipy-openblas32", runtime)


# MKL's layers, linked directly: LP64 interface, sequential threading (our thread pool
# parallelizes, as with OpenBLAS; no second OpenMP runtime in the process), core
MKL_LAYERS = ("mkl_intel_lp64", "mkl_sequential", "mkl_core")
# mkl_core loads the kernels for the CPU it finds at run time from its own folder (the generic
# `def` ones where those for the CPU are missing), so a library that travels carries them all;
# the vector math (vml) libraries are not needed for BLAS
MKL_CPU_KERNELS = ("mkl_def", "mkl_mc3", "mkl_avx*")


def mkl_prefixes() -> tuple:
    """Where pip puts the mkl-devel wheel (its include/ and lib/): this environment's prefix, or
    the user's base for `pip install --user`."""
    return sys.prefix, site.getuserbase()


def mkl_prefix() -> str | None:
    """The first of mkl_prefixes() that has the wheel's header; None if none has it."""
    return next((p for p in mkl_prefixes()
                 if os.path.isfile(os.path.join(p, "include", "mkl_cblas.h"))), None)


@functools.lru_cache(maxsize=None)
def find_mkl() -> Blas:
    """MKL from the mkl-devel wheel (headers under <prefix>/include, libraries under <prefix>/lib;
    the wheel ships only versioned names such as libmkl_core.so.3)."""
    fix = "pip install mkl-devel (or ait-build[mkl])"
    prefix = mkl_prefix()
    if prefix is None:
        looked = " or ".join(os.path.join(p, "include") for p in mkl_prefixes())
        raise AitError(f"the target's kernels.gemm is mkl, but {looked} has no mkl_cblas.h: " + fix)
    include_dir, lib_dir = os.path.join(prefix, "include"), os.path.join(prefix, "lib")
    libs, runtime = [], []
    for layer in MKL_LAYERS:
        found = sorted(glob.glob(os.path.join(lib_dir, f"lib{layer}.so*")))
        if not found:
            raise AitError(f"the target's kernels.gemm is mkl, but {lib_dir} has no lib{layer}: "
                           + fix)
        libs.append(":" + os.path.basename(found[0]))
        runtime.append(found[0])
    for kernels in MKL_CPU_KERNELS:
        runtime += sorted(glob.glob(os.path.join(lib_dir, f"lib{kernels}.so*")))
    defines = ("AIT_MKL", "AIT_SGEMM=cblas_sgemm", "AIT_BLAS_SET_THREADS=mkl_set_num_threads")
    return Blas(include_dir, lib_dir, tuple(libs), defines, "mkl", tuple(runtime))


def find_installed_blas(cxx: str) -> Blas:
    """kernels.gemm `auto`: MKL where the compiler builds for x86-64 and the mkl-devel wheel is
    installed (the faster of the two on the seed models, docs/targets.md), else OpenBLAS. An
    installed but broken MKL is an error, not a silent fallback."""
    if compiler_machine(cxx).startswith("x86_64") and mkl_prefix() is not None:
        return find_mkl()
    return find_openblas()


# kernels.gemm -> where its BLAS is; the target's conv2d family must be im2col over the same one
BLAS = {"openblas": lambda cxx: find_openblas(), "mkl": lambda cxx: find_mkl(),
        "auto": find_installed_blas}


def mixed_blas(kernels) -> str:
    """Why a target's `kernels:` cannot be built ('' when they can): conv2d is im2col + GEMM, so
    it must name the BLAS gemm does (checked when the target loads)."""
    gemm = kernels.get("gemm", "openblas")
    conv = kernels.get("conv2d", f"im2col_{gemm}")
    if conv != f"im2col_{gemm}":
        return (f"kernels.conv2d '{conv}' and kernels.gemm '{gemm}' name different BLAS "
                f"libraries; use conv2d: im2col_{gemm}")
    return ""


def find_blas(target) -> Blas:
    problem = mixed_blas(dict(target.kernels))
    if problem:
        raise AitError(f"target '{target.name}': {problem}")
    return BLAS[target.kernel("gemm", "openblas")](target.cxx)


def simd_flags(target, cxx: str) -> tuple:
    lanes = target.fact("simd")
    if not lanes:
        return ()
    machine = compiler_machine(cxx).split("-")[0]
    if not machine:  # `-dumpmachine` said nothing: not a compiler we can ask
        raise AitError(f"target '{target.name}': '{cxx}' does not say which machine it compiles "
                       "for (`-dumpmachine`); compiler.cxx must name a C++ compiler (g++, clang++)")
    flags = SIMD_FLAGS.get((machine, int(lanes)))
    if flags is None:
        raise AitError(f"target '{target.name}' asks for {lanes}-lane float32 vectors, which "
                       f"'{cxx}' ({machine or 'unknown machine'}) cannot target; fix device.simd")
    return flags


def arch_flags(arch: str) -> tuple:
    """`arch` names the CPU the generated code may assume (GCC's -march names: x86-64-v3,
    znver3, armv8.2-a); none: the compiler's default. Never `native`: the target file, not the
    building machine, says what the library runs on."""
    if not arch:
        return ()
    if arch == "native":
        raise AitError("arch 'native' would take the architecture from the building machine; "
                       "name it (x86-64-v3, znver3, armv8.2-a, ...)")
    return (f"-march={arch}",)


def cpu_toolchain(target) -> Toolchain:
    blas = find_blas(target)
    flags = (tuple(target.flags) + arch_flags(target.arch) + simd_flags(target, target.cxx)
             + CPU_EXTRA_FLAGS)
    return Toolchain(target=target.name, cxx=target.cxx, flags=flags,
                     include_dirs=(blas.include_dir,), defines=blas.defines,
                     link_flags=tuple(target.link_flags), libs=blas.libs,
                     lib_dirs=(blas.lib_dir,), rpath=("$ORIGIN",),
                     libraries=((blas.package, package_version(blas.package)),),
                     runtime_files=runtime_files(blas))


def runtime_files(blas: Blas) -> tuple:
    """(path, name in the build folder) of what a built library carries so that it loads
    anywhere: the BLAS' shared libraries, found through the library's `$ORIGIN` rpath, and the
    licence files of the wheel they come from, under licenses/."""
    files = [(path, os.path.basename(path)) for path in blas.runtime]
    return tuple(files) + licence_files(blas.package)


def licence_files(package: str) -> tuple:
    try:
        listed = metadata.distribution(package).files or ()
    except metadata.PackageNotFoundError:
        return ()
    found = sorted(str(f.locate()) for f in listed if "licen" in f.name.lower())
    return tuple((path, os.path.join("licenses", f"{package}-{os.path.basename(path)}"))
                 for path in found if os.path.isfile(path))
