"""`ait-build check`: validate a spec file of any kind (Model, Target, Blocks or Profile)."""

from __future__ import annotations

from ait_build.errors import SpecError
from ait_build.ops.registry import all_ops
from ait_build.spec.blocks import load_blocks
from ait_build.spec.model import load_model, op_for_entry
from ait_build.spec.profile import read_profile
from ait_build.spec.target import load_target
from ait_build.spec.yamlfile import YMap, load_yaml, where


def spec_kind(path: str) -> str:
    """The `kind` a spec file declares ('Model' when it declares none; load_model says so)."""
    kind = load_yaml(path).get("kind")
    return kind if kind in ("Model", "Target", "Blocks", "Profile") else "Model"


def check_spec(path: str, backends) -> str:
    """Load the file as its kind declares (a target checked against `backends`, name ->
    Backend); returns a one-line summary or raises SpecError."""
    kind = spec_kind(path)
    if kind == "Target":
        target = load_target(path, backends)
        return f"ok (target: {' '.join(filter(None, (target.backend, target.arch)))})"
    if kind == "Blocks":
        library = load_blocks(path)
        lint_blocks(library)
        return f"ok (blocks: {', '.join(sorted(library.blocks)) or 'none'})"
    if kind == "Profile":
        entries = sum(len(e) for e in read_profile(path).values())
        return f"ok (profile: {entries} entries)"
    graph = load_model(path)
    return f"ok ({len(graph.nodes)} nodes, {len(graph.weight_names())} weights)"


def lint_blocks(library) -> None:
    """What can be checked in a block before it has arguments: entries are op nodes or block
    uses, and literal op and block names exist with known attributes."""
    ops = {k: v for k, v in all_ops().items() if not v.internal}
    for block in library.blocks.values():
        for i, entry in enumerate(block.graph):
            loc = block.graph.where(i)
            if not isinstance(entry, YMap):
                raise SpecError("a graph entry must be a mapping", loc)
            if "op" in entry:
                if not _templated(entry["op"]):
                    op_for_entry(entry["op"], entry, ops)
            elif "block" in entry:
                if not _templated(entry["block"]):
                    library.get(entry["block"], where(entry, "block"))
            else:
                raise SpecError("a graph entry needs 'op' (an op node) or 'block' (a block use)", loc)


def _templated(value) -> bool:
    return isinstance(value, str) and "$" in value
