"""The cpu kernels' precompiled header (build/precompiled.py): made once where a kernel compiles,
used by g++, and leaving every object byte for byte what a compile without it gives; a build
whose objects all come from the cache makes none."""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import subprocess

import pytest

from ait_build.backends import get_backend
from ait_build.build import precompiled
from ait_build.build.commands import source_digest
from ait_build.pipeline import find_target
from buildproj import make_project

CPU = find_target("cpu")
TOOLCHAIN = get_backend("cpu").toolchain(CPU)
pytestmark = pytest.mark.skipif(not precompiled.is_gcc(TOOLCHAIN.cxx),
                                reason=f"{TOOLCHAIN.cxx} is not GCC: no precompiled header")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project built from nothing through a cache of its own (every kernel compiles)."""
    project = make_project(str(tmp_path_factory.mktemp("pch") / "proj"))
    project.scons("target=cpu")
    return project


def _headers(project) -> list:
    return glob.glob(project.path("build", "cpu", ".pch", "*", precompiled.NAME))


def _compile(project, source: str, obj: str, *extra: str) -> subprocess.CompletedProcess:
    """A kernel compiled as the build's compile step does (commands.compile_command)."""
    argv = TOOLCHAIN.compile_command(os.path.relpath(source, project.root),
                                     os.path.relpath(obj, project.root), prefix_map=project.root,
                                     seed=source_digest(source))
    return subprocess.run(argv + list(extra), cwd=project.root, capture_output=True, text=True,
                          env=TOOLCHAIN.environ(), timeout=300)


def test_one_header_is_made_and_gcc_reads_it(project):
    headers = _headers(project)
    assert len(headers) == 1 and os.path.getsize(headers[0] + ".gch") > 0, headers
    source = sorted(glob.glob(project.out("src", "*.cpp")))[0]
    done = _compile(project, source, project.path("probe.o"), "-include", headers[0], "-H")
    assert done.returncode == 0, done.stderr
    # -H lists the headers read; '!' marks a precompiled one that was used ('x': unusable)
    assert re.search(rf"^! {re.escape(headers[0])}\.gch$", done.stderr, re.M), done.stderr[:2000]


def test_objects_are_those_of_a_compile_without_it(project, tmp_path):
    kernels = [s for s in glob.glob(project.out("src", "*.cpp"))
               if os.path.basename(s) not in ("model.cpp", "build_id.cpp")]
    assert kernels
    for source in kernels:
        stem = os.path.splitext(os.path.basename(source))[0]
        built = project.out("obj", stem + TOOLCHAIN.object_suffix)
        plain = str(tmp_path / (stem + ".o"))
        done = _compile(project, source, plain)
        assert done.returncode == 0, done.stderr
        with open(built, "rb") as a, open(plain, "rb") as b:
            assert a.read() == b.read(), stem


def test_a_build_served_by_the_cache_makes_none(project, tmp_path):
    copy = project.copy(str(tmp_path / "copy"))  # build/ and its cache, without .pch
    for obj in glob.glob(copy.out("obj", "*")):
        os.remove(obj)
    result = copy.scons("target=cpu")
    assert glob.glob(copy.out("obj", "*")) and not result.steps("compiling"), result.out
    assert not os.path.exists(copy.path("build", "cpu", ".pch")), result.out


def test_a_new_compiler_flag_makes_another_header_and_drops_the_old(project, tmp_path):
    folder = str(tmp_path / ".pch")
    support = get_backend("cpu").support_files
    header = get_backend("cpu").precompiled_header
    first = precompiled.prefix_args(TOOLCHAIN, header, support, folder)
    flagged = dataclasses.replace(TOOLCHAIN, flags=TOOLCHAIN.flags + ("-DAIT_PCH_PROBE",))
    second = precompiled.prefix_args(flagged, header, support, folder)
    assert first and second and first != second
    assert sorted(os.listdir(folder)) == sorted([".lock", os.path.basename(os.path.dirname(second[1]))])
    assert os.path.exists(second[1] + ".gch") and not os.path.exists(first[1])
