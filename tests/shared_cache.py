"""The test run's compile cache, shared by every xdist worker (tests/conftest.py names it).

Most of the suite's time is the C++ compiler, and many tests build the same kernels (mlp's
`linear_bias`, a test model's softmax). The codegen helpers keep their objects under `objects/`
(content-keyed, codegen/conftest.py) and the SCons builds of the tests share the CacheDir
`scons/` (build/buildproj.py). A folder given in AIT_TEST_CACHE is used as it is and kept, so
a CI job may carry it from run to run; else the run makes one and removes it at the end.
"""

from __future__ import annotations

import os
import tempfile

VARIABLE = "AIT_TEST_CACHE"
# folders under pytest's temp dir that outlive the module that made them (a session fixture's,
# used by several modules) start with this; conftest.free_module_temp removes the others
SESSION_TEMP = "session-"


def make_run_folder() -> str | None:
    """Names a fresh folder in AIT_TEST_CACHE unless one is named; returns it when made here
    (the caller removes it), else None."""
    if os.environ.get(VARIABLE):
        return None
    os.environ[VARIABLE] = tempfile.mkdtemp(prefix="ait-test-cache-")
    return os.environ[VARIABLE]


def cache_folder(kind: str) -> str:
    """The run's shared folder for `kind` ('objects', 'scons'), made if missing."""
    make_run_folder()  # outside pytest (a helper imported by a script): a folder of its own
    folder = os.path.join(os.environ[VARIABLE], kind)
    os.makedirs(folder, exist_ok=True)
    return folder
