"""Compiler command lines: the `Toolchain` a backend makes for a target (backends/<name>/
toolchain.py says which flags, headers and libraries), and what every backend's toolchain
shares: finding the compiler and its exact version.

SCons and the codegen tests both build from these lines, so a library compiled either way is the
same. A missing compiler or library raises one AitError that names what to install.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from ait_build.errors import AitError
from ait_build.files.read import read_bytes

# nvcc from NVIDIA's pip wheels, the CUDA 13.0 every cuda build has been checked with (docs/ci.md;
# `ait-build init` pins the same in the project's ci/requirements.txt): all five, since
# nvidia-cuda-nvcc alone would pull the newest nvvm and headers
NVCC_WHEELS = ("nvidia-cuda-nvcc==13.0.88", "nvidia-nvvm==13.0.88", "nvidia-cuda-crt==13.0.88",
               "nvidia-cuda-runtime==13.0.96", "nvidia-cuda-cccl==13.0.85")

# what to install when a compiler is missing, by compiler name
INSTALL_HINTS = {
    "g++": "install GCC's C++ compiler (Debian/Ubuntu: apt-get install g++)",
    "c++": "install a C++ compiler (Debian/Ubuntu: apt-get install g++)",
    "clang++": "install clang (Debian/Ubuntu: apt-get install clang)",
    "nvcc": (f"pip install {' '.join(NVCC_WHEELS)}, then put site-packages/nvidia/cu13/bin on "
             "PATH (docs/ci.md), or install the CUDA toolkit and put its nvcc on PATH"),
    "hipcc": "install ROCm's hipcc (Debian/Ubuntu: apt-get install hipcc libamdhip64-dev)",
}

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
    object_suffix: str = ".os"  # of compiled objects (nvcc links only objects named .o)
    env: tuple = ()  # (name, value) the compiler needs in its environment (hipcc: HIP_PLATFORM)
    # (path, name) of files a built library carries in its folder: the shared libraries its
    # `$ORIGIN` rpath finds at run time, their licences (build/runtime_files.py places them)
    runtime_files: tuple = ()

    def compile_command(self, source: str, obj: str, include_dirs=(), prefix_map: str = "",
                        seed: str = "") -> list:
        """Compile one source. With `prefix_map` (the build folder) no folder reaches the object:
        the build folder becomes `.` and the source's own folder nothing (the later map wins),
        so a kernel compiled for two models gives one object; `seed` (the source's hash) is
        g++'s -frandom-seed, which would otherwise come from the object's path."""
        cmd = self._compile_head(include_dirs)
        if prefix_map:
            for mapping in (f"{prefix_map}=.", f"{os.path.dirname(source) or '.'}/="):
                cmd += [*self.host_prefix, f"-ffile-prefix-map={mapping}"]
        if seed and not self.host_prefix:  # nvcc: the host compiler's seed misses device code
            cmd.append(f"-frandom-seed={seed}")
        return cmd + ["-c", source, "-o", obj]

    def precompile_command(self, header: str, out: str) -> list:
        """Compile a header into a precompiled one (g++: `out` is its .gch) with the flags
        of compile_command, which then takes it through `-include` (build/precompiled.py)."""
        return self._compile_head() + ["-x", "c++-header", "-c", header, "-o", out]

    def _compile_head(self, include_dirs=()) -> list:
        """The compiler, flags, defines and include folders every compile starts with."""
        cmd = [self.cxx, *self.flags, *(f"-D{d}" for d in self.defines)]
        return cmd + [f"-I{d}" for d in tuple(include_dirs) + self.include_dirs]

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
        return compiler_version(self.cxx, self.env)

    def environ(self, base=None) -> dict:
        """`base` (default: this process's environment) with the compiler's own variables."""
        return {**(os.environ if base is None else base), **dict(self.env)}

    def manifest(self) -> dict:
        """What manifest.json records: the exact versions of the compiler (and of nvcc's host
        compiler) and libraries; no include or library paths (those differ per machine)."""
        out = {"cxx": self.cxx, "flags": list(self.flags), "version": self.version(),
               "libraries": dict(self.libraries)}
        if self.defines:  # a target's capabilities that change the code (cuda: dependent launch)
            out["defines"] = list(self.defines)
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


def version_key(version: str) -> tuple:
    """'13.0.88' -> (13, 0, 88): versions compare by their numbers."""
    return tuple(int(n) for n in re.findall(r"\d+", version))


def require_min_version(target, env: tuple = ()) -> None:
    """The target's compiler.min_version, if it has one, against the compiler's version."""
    if not target.min_version:
        return
    have = compiler_version(target.cxx, env)
    if have == "unknown" or version_key(have) < version_key(target.min_version):
        raise AitError(f"target '{target.name}' needs {target.cxx} {target.min_version} or newer "
                       f"(compiler.min_version); '{target.cxx}' is version {have}")


# compilers whose exact version only `--version` tells (nvcc has no -dumpfullversion): the
# pattern that finds it there ("Cuda compilation tools, release 13.0, V13.0.88"; "HIP version:
# 5.2.21153-...")
VERSION_PATTERNS = {"nvcc": r"release [\d.]+, V(\d+(?:\.\d+)+)", "hipcc": r"HIP version: (\S+)"}


@functools.lru_cache(maxsize=None)
def compiler_version(cxx: str, env: tuple = ()) -> str:
    """The compiler's exact version ('13.0.88', '12.2.0'), or 'unknown' when it does not say;
    `env`: (name, value) pairs it runs with (hipcc needs HIP_PLATFORM where nvcc is on PATH too)."""
    pattern = VERSION_PATTERNS.get(os.path.basename(cxx))
    cmd = [cxx, "--version"] if pattern else [cxx, "-dumpfullversion", "-dumpversion"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                             env={**os.environ, **dict(env)} if env else None)
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
        text = read_bytes(path).decode("utf-8", "replace")
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
