"""The importer tests build with tests/conftest.py's fixtures (compile once per kernel per session)
and import their factories as `tests.importers.zoo:NAME`."""

import os
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(TESTS))  # the factories: tests.importers.zoo:NAME


@pytest.fixture(autouse=True)
def _project_root(monkeypatch):
    monkeypatch.chdir(os.path.dirname(TESTS))  # `import torch tests.importers.zoo:NAME` from here
