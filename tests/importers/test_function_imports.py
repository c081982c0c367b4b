"""The importer package's modules import each other only at the top of a module: function-level
imports are left for the optional packages (torch, onnx) and for the frontends the command line
loads on demand (tests/test_layering.py checks the whole package for circles)."""

from __future__ import annotations

import ast
import os

import ait_build.importers

PACKAGE = os.path.dirname(ait_build.importers.__file__)
OPTIONAL = ("torch", "onnx", "onnxruntime", "transformers", "torchvision")
LAZY = ("cli.py",)  # the command line loads a frontend only when it runs


def _modules() -> dict:
    out = {}
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE, name), encoding="utf-8") as fh:
                out[name[:-3]] = ast.parse(fh.read())
    return out


def _imported(node) -> list:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return []


def test_imports_inside_functions_are_optional_packages_only():
    found = []
    for name, tree in _modules().items():
        if name + ".py" in LAZY:
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                for module in _imported(node):
                    if module.split(".")[0] not in OPTIONAL:
                        found.append(f"{name}.py:{node.lineno} imports {module}")
    assert not found, found
