"""Helpers for the cuda tests: fp16 variants of the zoo's small specs, and building a spec for a
cuda target as one translation unit (the compile-only test on a 2-core machine: the CUTLASS
headers are parsed once per model). A plain module, not a package: tests/cuda is on sys.path
under pytest's default import mode, and a package named `cuda` would clash with NVIDIA's."""

from __future__ import annotations

import ctypes
import os
import subprocess

from ait_build.codegen.emit import emit
from ait_build.spec.target import find_target
from ait_build.toolchain import toolchain_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spec_path(name: str) -> str:
    return os.path.join(ROOT, "specs", f"{name}.yaml")


def fp16_spec(name: str) -> str:
    """specs/<name>.yaml computing in float16 (bench's variant under build/specs/)."""
    from ait_build.bench import dtype_variant
    return dtype_variant(spec_path(name), "float16", ROOT)


def unity_build(spec: str, target: str, out_dir: str) -> tuple:
    """Emits `spec` for `target` into out_dir and returns (emission, compile command of one
    translation unit including every kernel and the model file, link command)."""
    t = find_target(target)
    emission = emit(spec, t, out_dir)
    unity = os.path.join(out_dir, "all.cu")
    with open(unity, "w") as fh:
        for rel in emission.kernel_sources + [emission.model_source]:
            fh.write(f'#include "{rel}"\n')
    tc = toolchain_for(t)
    obj = os.path.join(out_dir, "all.o")
    lib = os.path.join(out_dir, f"lib{emission.name}.so")
    return emission, tc.compile_command(unity, obj), tc.link_command([obj], lib)


def run_checked(cmd: list, what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise AssertionError(f"{what} failed ({' '.join(cmd[:3])} ...):\n{proc.stderr[-8000:]}")


def c_create(lib_path: str, name: str, weights: str) -> tuple:
    """(status, message) of ait_<name>_create on the library; destroys a created model."""
    lib = ctypes.CDLL(lib_path)
    create, destroy = lib[f"ait_{name}_create"], lib[f"ait_{name}_destroy"]
    last_error = lib[f"ait_{name}_last_error"]
    create.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    destroy.argtypes = [ctypes.c_void_p]
    last_error.restype = ctypes.c_char_p
    handle = ctypes.c_void_p()
    rc = create(weights.encode(), ctypes.byref(handle))
    message = last_error().decode()
    if handle.value:
        destroy(handle)
    return rc, message
