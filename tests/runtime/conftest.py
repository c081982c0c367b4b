"""The toy library built once per session (see toylib.py)."""

import shutil

import pytest

from toylib import build_toy


@pytest.fixture(scope="session")
def toy_dir(tmp_path_factory) -> str:
    if not shutil.which("g++"):
        pytest.skip("g++ is not installed")
    return build_toy(str(tmp_path_factory.mktemp("toy")))
