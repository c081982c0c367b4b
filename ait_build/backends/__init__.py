"""Backends: per target backend, which kernel template and configuration each op gets.

A backend module provides LOWER (op -> lowering function taking a codegen.plan.Lowerer),
MODEL_TEMPLATE, SUPPORT_FILES (generated headers shared by its sources) and lower_inputs /
lower_outputs (the conversions at the model's edges).
"""

from __future__ import annotations

import importlib

from ait_build.errors import AitError

BACKEND_MODULES = {"cpu": "ait_build.backends.cpu", "cuda": "ait_build.backends.cuda"}


def get_backend(target):
    name = target.backend
    if name not in BACKEND_MODULES:
        raise AitError(f"target '{target.name}': code generation for the {name} backend is not "
                       f"available yet (backends with code generation: "
                       f"{', '.join(sorted(BACKEND_MODULES))})")
    try:
        return importlib.import_module(BACKEND_MODULES[name])
    except ImportError as exc:
        raise AitError(f"target '{target.name}': the {name} backend cannot be loaded: {exc}") from None
