"""The package's layering, read from its imports (ast): ait_build/ mirrors the pipeline, no stage
imports a later one, and no module reaches itself through its imports. Imports inside functions
count like any other (one used to dodge a circle is still a circle), and so do the modules that
backends/__init__.py and cli/commands.py import by name."""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "ait_build")

# Each stage with why it sits where it does; a module may import its own stage and earlier ones.
STAGES = (
    ("errors", "the errors every stage raises"),
    ("files", "every file read and written through one place: regular files only, no links out"),
    ("ir", "the graph, dims and dtypes, and what every stage shares: weights, placement, data"),
    ("ops", "one row per op on ir's types: inference, weights, the NumPy reference"),
    ("spec", "YAML files (models, targets, profiles) read into ir's Graph, attrs checked by ops"),
    ("passes", "rewrites of the graph, on the target's capabilities"),
    ("codegen", "backend-neutral planning and rendering of an optimized graph"),
    ("backends", "each backend's lowerings on codegen, its templates and toolchain"),
    ("pipeline", "strings spec -> passes -> codegen on a backend: the one place that does"),
    ("build", "SCons: generation through the pipeline, compile, link"),
    ("runtime", "loads and runs what a build made"),
    ("importers", "a tool: PyTorch and ONNX models -> spec files"),
    ("profile", "a tool: times kernel configurations through the pipeline and the build"),
    ("bench", "a tool: times built models through the build and the runtime"),
    ("serve", "a tool: serves built models through Triton on the runtime"),
    ("cli", "the command line: each command's arguments, calling everything above"),
    ("__main__", "`python -m ait_build`: the command line"),
)
RANK = {name: i for i, (name, _) in enumerate(STAGES)}
TOP_LEVEL = {"__init__.py", "__main__.py", "pipeline.py", "errors.py"}
DATA_FOLDERS = {"project_files"}  # files `ait-build init` copies; no Python


def modules() -> dict:
    """module name -> file path, for every module of the package."""
    found = {}
    for folder, dirs, files in os.walk(PKG):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


MODULES = modules()


def _imported(module: str, node, path: str) -> list:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    # `from package import module` imports the module
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _by_name(tree) -> list:
    """Modules a module imports by name: string constants naming a module of the package
    (backends/__init__.py's PACKAGES, cli/commands.py's rows)."""
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in MODULES]


def import_graph() -> dict:
    """module -> the package's modules it imports (at its top, inside functions or by name)."""
    graph = {}
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        targets = set(_by_name(tree))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets.update(_imported(module, node, path))
        graph[module] = {t for t in targets if t in MODULES and t != module}
    return graph


GRAPH = import_graph()


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""  # "": the package face (__version__), for anyone


def test_the_top_of_the_package_holds_only_the_stages_and_the_two_modules():
    for name in sorted(os.listdir(PKG)):
        path = os.path.join(PKG, name)
        if name == "__pycache__" or name in DATA_FOLDERS:
            continue
        if os.path.isdir(path):
            assert name in RANK, f"ait_build/{name}/ is no stage of STAGES"
        else:
            assert name in TOP_LEVEL, f"ait_build/{name}: put it in the stage it belongs to"


def test_every_stage_exists():
    for name, _ in STAGES:
        assert os.path.exists(os.path.join(PKG, name)) or os.path.exists(
            os.path.join(PKG, name + ".py")), name


def test_no_stage_imports_a_later_one():
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        for target in sorted(targets):
            if stage(target) and RANK[stage(target)] > RANK[stage(module)]:
                wrong.append(f"{module} ({stage(module)}) imports {target} ({stage(target)})")
    assert not wrong, "\n".join(wrong)


def circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_reaches_itself_through_its_imports():
    found = circles(GRAPH)
    assert not found, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in found)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [{"a", "b"}]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_the_circle_finder(graph, expected):
    assert circles(graph) == expected


def test_imports_by_name_are_read():
    assert "ait_build.backends.cpu" in GRAPH["ait_build.backends"]
    assert "ait_build.cli.check" in GRAPH["ait_build.cli.commands"]
