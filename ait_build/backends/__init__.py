"""Backends: one package per backend (backends/<name>/), each making one `Backend` (base.py)
that describes itself; `gpu/` is the vendor-neutral layer the GPU backends extend. This module
only knows where each backend package is, and imports a backend when it is first asked for.
"""

from __future__ import annotations

import importlib

from ait_build.backends.base import Backend
from ait_build.errors import AitError

PACKAGES = {"cpu": "ait_build.backends.cpu", "cuda": "ait_build.backends.cuda",
            "rocm": "ait_build.backends.rocm"}


def backend_names() -> tuple:
    return tuple(sorted(PACKAGES))


def get_backend(name: str) -> Backend:
    if name not in PACKAGES:
        raise AitError(f"code generation for the {name} backend is not available (backends with "
                       f"code generation: {', '.join(backend_names())})")
    try:
        return importlib.import_module(PACKAGES[name]).BACKEND
    except ImportError as exc:
        raise AitError(f"the {name} backend cannot be loaded: {exc}") from None
