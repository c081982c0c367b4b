"""The scripts under bench/ (not a package) as modules, for their tests."""

from __future__ import annotations

import importlib.util
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(name: str):
    """bench/<name>.py, imported under `name`."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "bench", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
