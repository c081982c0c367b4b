"""Spec graph entries: a node as the mapping a spec's graph list holds, and that mapping as one
line of YAML. blocks.py (inside blocks) and write.py (the model's graph) both write them."""

from __future__ import annotations

import yaml


def entry_text(entry: dict) -> str:
    """One graph entry as a one-line YAML flow mapping, keys in the order given (YAML quotes
    what a flow mapping cannot hold bare, such as `${i + 1}`)."""
    return yaml.safe_dump(entry, default_flow_style=True, sort_keys=False, width=10**9).strip()


def node_entry(node, prev: str | None, prefix: str = "", rename=None) -> dict:
    """The spec entry of a node; `prefix` is stripped from its name and its inputs' names
    inside a block, `rename` maps refs to what the entry must say."""
    rename = rename or {}
    name = node.name[len(prefix):] if prefix and node.name.startswith(prefix) else node.name
    entry = {"name": name, "op": node.op}
    inputs = [rename.get(r, r) for r in node.inputs]
    if inputs and not (len(inputs) == 1 and inputs[0] == prev):
        entry["inputs"] = inputs
    entry.update(node.attrs)
    overrides = {}
    for role, weight in node.weights.items():
        if weight == f"{node.name}.{role}":
            continue
        if prefix and weight.startswith(prefix):
            overrides[role] = weight[len(prefix):]
        else:
            overrides[role] = "/" + weight if prefix else weight
    if overrides:
        entry["weights"] = overrides
    return entry
