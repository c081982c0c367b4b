"""What a manifest says built it: the exact g++ version, nvcc's host compiler, header versions,
the OpenBLAS version and the target file (nvcc and hipcc: tests/build/test_manifest_versions.py)."""

from __future__ import annotations

import hashlib
import json
import os

from ait_build import __version__
from ait_build.codegen.emit import emit
from ait_build.spec.target import find_target
from ait_build.toolchain import compiler_version, header_version, host_compiler

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
    target = find_target("cpu")
    emit(os.path.join(ROOT, "specs", "mlp.yaml"), target, str(tmp_path))
    with open(tmp_path / "manifest.json") as fh:
        manifest = json.load(fh)
    assert manifest["ait_build_version"] == __version__
    assert manifest["compiler"]["version"] == compiler_version("g++")
    assert manifest["compiler"]["libraries"]["scipy-openblas32"][0].isdigit()
    assert manifest["target_file"] == {"name": "cpu.yaml", "sha256": _sha(target.source),
                                       "digest": target.digest()}
