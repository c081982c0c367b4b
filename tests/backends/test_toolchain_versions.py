"""What a manifest says built it: the exact g++ version, nvcc's host compiler, header versions,
the OpenBLAS version and the target file (nvcc and hipcc: tests/build/test_manifest_versions.py)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from ait_build import __version__
from ait_build.backends import toolchain_for
from ait_build.backends.toolchain import (compiler_version, header_version, host_compiler,
                                          version_key)
from ait_build.errors import AitError
from ait_build.pipeline import emit, find_target, load_target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_gcc_version_is_exact():
    version = compiler_version("g++")
    assert version.count(".") == 2 and all(part.isdigit() for part in version.split("."))


def test_host_compiler_of_nvcc():
    assert host_compiler(["-O3", "-ccbin", "g++-12"]) == "g++-12"
    assert host_compiler(["--compiler-bindir=clang++"]) == "clang++"
    assert host_compiler(["-O3"]) == "g++"


def test_header_version(tmp_path):
    (tmp_path / "version.h").write_text("#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n"
                                        "#define CUTLASS_PATCH 0 \n")
    assert header_version(str(tmp_path / "version.h"), "CUTLASS") == "4.2.0"
    assert header_version(str(tmp_path / "missing.h"), "CUTLASS") == "unknown"


def _sha(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def test_cpu_manifest_records_versions_and_the_target_file(tmp_path):
    target = find_target("cpu_openblas")
    emit(os.path.join(ROOT, "specs", "mlp.yaml"), target, str(tmp_path))
    with open(tmp_path / "manifest.json") as fh:
        manifest = json.load(fh)
    assert manifest["ait_build_version"] == __version__
    assert manifest["compiler"]["version"] == compiler_version("g++")
    assert manifest["compiler"]["libraries"]["scipy-openblas32"][0].isdigit()
    assert manifest["target_file"] == {"name": "cpu_openblas.yaml", "sha256": _sha(target.source),
                                       "digest": target.digest()}


def test_nvcc_from_the_pip_wheels_links_the_runtime_from_its_lib_folder(tmp_path, monkeypatch):
    from ait_build.backends.cuda.toolchain import nvcc_wheel_lib_dirs
    cu13 = tmp_path / "site-packages" / "nvidia" / "cu13"
    (cu13 / "bin").mkdir(parents=True)
    (cu13 / "lib").mkdir()
    (cu13 / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (cu13 / "bin" / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", str(cu13 / "bin"))
    assert nvcc_wheel_lib_dirs("nvcc") == ()  # no static runtime there
    (cu13 / "lib" / "libcudart_static.a").write_text("")
    assert nvcc_wheel_lib_dirs("nvcc") == (str(cu13 / "lib"),)
    (cu13 / "lib64").mkdir()  # a toolkit's layout: nvcc.profile finds lib64 itself
    assert nvcc_wheel_lib_dirs("nvcc") == ()


def test_min_version_is_enforced(tmp_path):
    assert version_key("13.0.88") > version_key("12.4") > version_key("12")
    for wanted, ok in (("1.0", True), ("9999", False)):
        path = tmp_path / f"t{ok}.yaml"
        path.write_text("apiVersion: ait-build/v1\nkind: Target\nname: t\nbackend: cpu\n"
                        f"compiler: {{cxx: g++, min_version: '{wanted}'}}\n")
        target = load_target(str(path))
        assert target.min_version == wanted
        if ok:
            toolchain_for(target)
        else:
            with pytest.raises(AitError, match=r"needs g\+\+ 9999 or newer \(compiler.min_version\)"):
                toolchain_for(target)


def test_a_program_that_is_not_a_compiler_is_named_as_such(tmp_path):
    """`cxx: /bin/false` printed a SIMD-width message that sent the user to device.simd."""
    path = tmp_path / "t.yaml"
    path.write_text("apiVersion: ait-build/v1\nkind: Target\nname: t\nbackend: cpu\n"
                    "compiler: {cxx: /bin/false}\ndevice: {simd: 8}\n")
    with pytest.raises(AitError, match=r"'/bin/false' does not say which machine it compiles for"):
        toolchain_for(load_target(str(path)))
