"""Fixtures of the serving tests: the cpu builds (serving.py) and the Python that serves them.

PyTriton 0.7 pins NumPy < 2, so the serving environment is usually not the test run's: the server
and its clients run under AIT_SERVE_PYTHON, else the repository's .venv-serve/bin/python (which
.ci/run makes), else this Python; the comparisons with Model.run happen here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from serving import REPO, build_models, env
from shared_cache import SESSION_TEMP

PROBE = """import sys
from ait_build.errors import AitError
from ait_build.serve.binding import pytriton
try:
    pytriton()
    import tritonclient.grpc, tritonclient.http
except (AitError, ImportError) as exc:
    print(exc)
    sys.exit(1)
"""


@pytest.fixture(scope="session")
def builds(tmp_path_factory) -> dict:
    return build_models(str(tmp_path_factory.mktemp(SESSION_TEMP + "serve") / "proj"), "cpu")


@pytest.fixture(scope="session")
def serve_python() -> str:
    """A Python that can serve (PyTriton and tritonclient work there), else the test skips."""
    candidates = [os.environ.get("AIT_SERVE_PYTHON"),
                  os.path.join(REPO, ".venv-serve", "bin", "python"), sys.executable]
    reasons = []
    for python in dict.fromkeys(c for c in candidates if c and os.path.exists(c)):
        proc = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, env=env(),
                              timeout=120)
        if proc.returncode == 0:
            return python
        said = (proc.stdout + proc.stderr).strip().splitlines()
        reasons.append(f"{python}: {said[-1] if said else f'exit status {proc.returncode}'}")
    pytest.skip("no Python here can serve (set AIT_SERVE_PYTHON to one with ait-build[serve]; "
                ".ci/run makes .venv-serve): " + "; ".join(reasons))
