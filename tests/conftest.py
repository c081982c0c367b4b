"""Fixtures every compiling test shares: the cpu target, one object cache per session (a kernel
shared by several test models compiles once) and build_spec, a spec built and loaded on the cpu
backend (tests/backends/cpu/helpers.py)."""

from __future__ import annotations

import pytest

from ait_build.backends import toolchain_for
from ait_build.pipeline import emit, find_target
from backends.cpu.helpers import CModel, build_library


@pytest.fixture(scope="session")
def cpu_target():
    return find_target("cpu")


@pytest.fixture(scope="session")
def object_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("objects")


@pytest.fixture(scope="session")
def build_spec(cpu_target, object_cache, tmp_path_factory):
    """build_spec(spec_path, optimize=True) -> (CModel, out_dir, emission)."""
    tc = toolchain_for(cpu_target)
    built = []

    def run(spec_path: str, optimize: bool = True, name: str = "m"):
        out_dir = str(tmp_path_factory.mktemp(name))
        emission = emit(spec_path, cpu_target, out_dir, optimize=optimize)
        lib = build_library(tc, out_dir, emission, object_cache)
        model = CModel(out_dir, emission, lib)
        built.append(model)
        return model, out_dir, emission

    yield run
    for m in built:
        m.close()
