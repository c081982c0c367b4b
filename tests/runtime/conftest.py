"""The toy library built once per session, and a host-memory CUDA runtime (see toylib.py)."""

import shutil
import sys

import pytest

from ait_build.runtime import cuda
from shared_cache import SESSION_TEMP
from toylib import HostRuntime, build_toy


@pytest.fixture(scope="session")
def toy_dir(tmp_path_factory) -> str:
    if not shutil.which("g++"):
        pytest.skip("g++ is not installed")
    return build_toy(str(tmp_path_factory.mktemp(SESSION_TEMP + "toy")))


@pytest.fixture
def host_runtime(monkeypatch):
    """A one-device HostRuntime standing in for libcudart; torch cannot be imported."""
    rt = HostRuntime()
    monkeypatch.setattr(cuda, "runtime", lambda: rt)
    monkeypatch.setitem(sys.modules, "torch", None)  # importing torch would fail: none needed
    return rt
