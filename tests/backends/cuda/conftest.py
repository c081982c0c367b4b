"""Fixtures of the cuda tests (helpers live in cuda_helpers.py)."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def nvcc():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    return shutil.which("nvcc")
