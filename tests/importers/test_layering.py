"""The importer package's modules import each other without circles, and only at the top of a
module: function-level imports are left for the optional packages (torch, onnx) and for the
frontends the command line loads on demand."""

from __future__ import annotations

import ast
import os

import ait_build.importers

PACKAGE = os.path.dirname(ait_build.importers.__file__)
PREFIX = "ait_build.importers."
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


def test_no_import_circles_inside_importers():
    graph = {}
    for name, tree in _modules().items():
        graph[name] = {m[len(PREFIX):] for node in ast.walk(tree) for m in _imported(node)
                       if m.startswith(PREFIX)}
    state: dict = {}

    def visit(name, path):
        state[name] = "open"
        for dep in sorted(graph.get(name, ())):
            assert state.get(dep) != "open", "import circle: " + " -> ".join(path + [dep])
            if dep not in state:
                visit(dep, path + [dep])
        state[name] = "done"

    for name in graph:
        if name not in state:
            visit(name, [name])


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
