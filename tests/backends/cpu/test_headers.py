"""The cpu library's plain C++ headers (templates/common/include, templates/cpu/include), which a
build copies into its src/ as they are: each compiles on its own, warning-free, and a C++ program
(cxx/test_headers.cpp) checks what they do: float16/bfloat16 rounding, errors and host memory,
buffers, workspace placement, the weights reader and the workspace pool, the thread pool and row
splitting, the vector math, our GEMM's panels and the cache of weight copies."""

from __future__ import annotations

import os
import subprocess

import pytest

from ait_build.backends import toolchain_for
from ait_build.backends.cpu.toolchain import find_openblas
from ait_build.codegen.render import templates_dir
from ait_build.pipeline import emit, find_target

from .helpers import (KERNEL_HEADER, MODEL_PREFIX, precompile_kernel_header,
                      precompile_model_prefix)

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDES = [os.path.join(templates_dir(), folder, "include") for folder in ("common", "cpu")]
HEADERS = sorted(f"{folder}/{name}" for folder in ("common", "cpu")
                 for name in os.listdir(os.path.join(templates_dir(), folder, "include")))


def compile_command(*args) -> list:
    """The compiler and what the cpu toolchain gives every source: C++17, threads, `omp simd`,
    the BLAS's header and names (ait_cpu.h declares its calls); warnings are errors."""
    blas = find_openblas()
    includes = [flag for folder in INCLUDES + [blas.include_dir] for flag in ("-I", folder)]
    return [find_target("cpu").cxx, "-std=c++17", "-pthread", "-fopenmp-simd", "-Wall", "-Wextra",
            "-Werror", *[f"-D{define}" for define in blas.defines], *includes, *args]


@pytest.mark.parametrize("header", HEADERS)
def test_header_compiles_on_its_own(header):
    """Each header includes what it uses: a source whose only line includes it compiles."""
    name = os.path.basename(header)
    proc = subprocess.run(compile_command("-fsyntax-only", "-x", "c++", "-"),
                          input=f'#include "{name}"\n', capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_headers_do_what_they_say(tmp_path):
    exe = str(tmp_path / "test_headers")
    build = subprocess.run(compile_command("-O1", os.path.join(HERE, "cxx", "test_headers.cpp"),
                                           "-o", exe), capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run([exe, str(tmp_path)], capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != "AIT_NUM_THREADS"})
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stdout + run.stderr


@pytest.mark.parametrize("which", ["kernel", "model"])
def test_precompiled_header_is_used_and_changes_no_object(cpu_target, tmp_path, which):
    """The tests' builds precompile ait_cpu.h for the kernels and model.cpp's leading includes
    for model.cpp (helpers.py): g++ takes each (`-H` marks it `!`) and the object is byte for
    byte the plain compile's."""
    tc = toolchain_for(cpu_target)
    spec = os.path.join(HERE, "..", "..", "..", "specs", "mlp.yaml")
    objects = []
    for use_pch in (False, True):
        out_dir = str(tmp_path / f"pch{int(use_pch)}")
        emission = emit(spec, cpu_target, out_dir)
        extra, header = [], None
        if use_pch:
            assert precompile_kernel_header(tc, out_dir, emission, str(tmp_path))
            header = KERNEL_HEADER
            if which == "model":
                extra = precompile_model_prefix(tc, out_dir, emission, str(tmp_path))
                assert extra, "model.cpp's includes were not precompiled"
                header = MODEL_PREFIX
        rel = emission.kernel_sources[0] if which == "kernel" else emission.model_source
        src = os.path.join(out_dir, rel)
        objects.append(str(tmp_path / f"{which}{int(use_pch)}.o"))
        argv = tc.compile_command(src, objects[-1], prefix_map=out_dir, seed="0") + extra
        proc = subprocess.run(argv[:1] + ["-H"] + argv[1:], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]
        used = [line for line in proc.stderr.splitlines() if line.startswith("! ")]
        assert used == ([f"! {os.path.join(out_dir, header)}.gch"] if use_pch else []), \
            proc.stderr[-2000:]
    with open(objects[0], "rb") as plain, open(objects[1], "rb") as precompiled:
        assert plain.read() == precompiled.read()
