"""nvcc and hipcc tell their exact version only through `--version`; cuda manifests record it,
nvcc's host compiler and CUTLASS' version; two projects at different paths render byte-identical
cuda sources and manifests (a stand-in nvcc: rendering needs no compiler run)."""

from __future__ import annotations

import filecmp
import json
import os

from ait_build.backends.toolchain import compiler_version
from ait_build.pipeline import emit, find_target
from buildproj import MODEL, NVCC_VERSION, ONE_OP, REPO, fake_compiler, make_project

HIPCC_VERSION = """HIP version: 5.2.21153-0
Debian clang version 15.0.6
Target: x86_64-pc-linux-gnu
"""


def test_nvcc_and_hipcc_versions_come_from_version_output(tmp_path):
    assert compiler_version(fake_compiler(str(tmp_path / "a"), "nvcc", NVCC_VERSION)) == "13.0.88"
    assert compiler_version(fake_compiler(str(tmp_path / "a"), "hipcc", HIPCC_VERSION)) == "5.2.21153-0"
    assert compiler_version(fake_compiler(str(tmp_path / "b"), "nvcc", "no version\n")) == "unknown"


def test_cuda_manifest_records_nvcc_host_compiler_and_cutlass(tmp_path, monkeypatch):
    fake_compiler(str(tmp_path / "bin"), "nvcc", NVCC_VERSION)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    compiler_version.cache_clear()  # "nvcc" may have meant the real one earlier in this process
    try:
        emit(os.path.join(REPO, "specs", "mlp.yaml"), find_target("h200"), str(tmp_path / "out"))
    finally:
        compiler_version.cache_clear()
    with open(tmp_path / "out" / "manifest.json") as fh:
        compiler = json.load(fh)["compiler"]
    assert compiler["cxx"] == "nvcc" and compiler["version"] == "13.0.88"
    assert compiler["host"] == {"cxx": "g++", "version": compiler_version("g++")}
    assert compiler["libraries"] == {"cutlass": "4.2.0"}  # the nvidia-cutlass==4.2.0.0 pin


def test_cuda_sources_are_byte_identical_across_paths(tmp_path):
    """Generation only (scons builds the manifest node), for a100 and h200, in two projects
    whose checkout and package copies sit at different paths."""
    nvcc_bin = os.path.dirname(fake_compiler(str(tmp_path / "bin"), "nvcc", NVCC_VERSION))
    env = {"PATH": f"{nvcc_bin}{os.pathsep}{os.environ['PATH']}"}
    projects = [make_project(str(tmp_path / "one" / "checkout")), make_project(str(tmp_path / "2"))]
    for project in projects:
        manifests = [os.path.join("build", t, MODEL, "manifest.json") for t in ("a100", "h200")]
        result = project.scons("target=a100,h200", *manifests, env=env)
        assert not result.steps("compiling"), result.out
    for target in ("a100", "h200"):
        a, b = (p.path("build", target, MODEL) for p in projects)
        files = sorted(os.path.relpath(os.path.join(d, f), a) for d, _, fs in os.walk(a) for f in fs)
        assert "manifest.json" in files and any(f.endswith(".cu") for f in files)
        assert files == sorted(os.path.relpath(os.path.join(d, f), b) for d, _, fs in os.walk(b) for f in fs)
        for rel in files:
            assert filecmp.cmp(os.path.join(a, rel), os.path.join(b, rel), shallow=False), rel
            with open(os.path.join(a, rel), "rb") as fh:
                assert str(tmp_path).encode() not in fh.read(), rel


def test_a_new_compiler_version_rebuilds_everything(tmp_path):
    """Signatures hold the compiler's version: an upgraded g++ neither reuses the objects of
    the old one nor leaves their version in the manifest."""
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\nif [ "$1" = -dumpfullversion ]; then echo "$FAKE_GXX"; exit 0; fi\n'
                       'exec /usr/bin/g++ "$@"\n')
    wrapper.chmod(0o755)
    project = make_project(str(tmp_path / "p"))
    with open(project.path("specs", "one_op.yaml"), "w", encoding="utf-8") as fh:
        fh.write(ONE_OP.format(name="one_op"))
    env = {"PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}"}
    project.scons("target=cpu", "model=one_op", env=dict(env, FAKE_GXX="12.2.0"))
    assert not project.scons("target=cpu", "model=one_op",
                             env=dict(env, FAKE_GXX="12.2.0")).steps("compiling")
    result = project.scons("target=cpu", "model=one_op", env=dict(env, FAKE_GXX="12.3.0"))
    assert len(result.steps("compiling")) == len(project.plan("one_op").compiled_sources) == 3, \
        result.out
    with open(project.path("build", "cpu", "one_op", "manifest.json")) as fh:
        assert json.load(fh)["compiler"]["version"] == "12.3.0"
