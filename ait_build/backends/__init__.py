"""Backends: one package per backend (backends/<name>/), each making one `Backend` (base.py)
that describes itself; `gpu/` is the vendor-neutral layer the GPU backends extend. This module
only knows where each backend package is, imports a backend when it is first asked for, and
makes a target's `Toolchain` through its backend (`toolchain_for`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from ait_build.backends.base import Backend
from ait_build.backends.toolchain import Toolchain, require_compiler, require_min_version
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


class BackendTable(Mapping):
    """name -> Backend of every package in PACKAGES, each imported when first looked up (what a
    target file is checked against: spec/target.py)."""

    def __getitem__(self, name: str) -> Backend:
        if name not in PACKAGES:
            raise KeyError(name)
        return get_backend(name)

    def __contains__(self, name) -> bool:
        return name in PACKAGES

    def __iter__(self):
        return iter(backend_names())

    def __len__(self) -> int:
        return len(PACKAGES)


BACKENDS = BackendTable()


def toolchain_for(target, check: bool = True) -> Toolchain:
    """The command lines for `target` (a spec.target.Target), as its backend makes them. `check`
    verifies the compiler exists first, raising one AitError that says what to install."""
    if check:
        require_compiler(target.cxx, target.name)
    toolchain = get_backend(target.backend).toolchain(target)
    if check:
        require_min_version(target, toolchain.env)
    return toolchain
