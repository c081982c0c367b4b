"""The importer tests build with the codegen tests' helpers (compile once per kernel per session)."""

import os
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)  # codegen.conftest
sys.path.insert(0, os.path.dirname(TESTS))  # the factories: tests.importers.zoo:NAME

from codegen.conftest import build_spec, cpu_target, object_cache  # noqa: E402,F401  (fixtures)


@pytest.fixture(autouse=True)
def _project_root(monkeypatch):
    monkeypatch.chdir(os.path.dirname(TESTS))  # `import torch tests.importers.zoo:NAME` from here
