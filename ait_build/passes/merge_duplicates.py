"""Common subexpressions: a node that computes the same op, with the same attributes and
weights, of the same inputs as an earlier node is dropped and its readers read the earlier
node's outputs.

Imported models repeat work the source computed once per layer or once per call site: the
importers' compositions (a sort's or a scatter's position tables, run-time sizes written as
iotas) are rebuilt at every use, and exports repeat a mask or a position table in each layer.
Every op here is a function of its inputs and attributes, so two such nodes are one. Walked in
order with the readers renamed as it goes, a chain of duplicates (iota -> reshape -> compare)
merges link by link. A node whose output is a graph output stays (the output keeps its name).
"""

from __future__ import annotations

import numpy as np

from ait_build.ir.graph import Graph
from ait_build.passes.rewrite import remove_nodes, summary


def _frozen(value):
    """A hashable form of an attribute value (an array by its bytes: repr would elide them)."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return (type(value).__name__, repr(value))


def _key(node) -> tuple:
    return (node.op, tuple(node.inputs), _frozen(node.attrs),
            tuple(sorted(node.weights.items())), len(node.outputs))


def run(graph: Graph, target) -> str:
    return summary((merge(graph), "duplicate nodes merged"))


def merge(graph: Graph, among: set | None = None) -> int:
    """Drops the duplicates (only nodes named in `among`, when given: a pass's own nodes) and
    returns how many went."""
    seen: dict = {}
    renamed: dict = {}  # dropped output -> the earlier node's
    dropped = []
    outputs = set(graph.outputs)
    for node in graph.nodes:
        node.inputs = [renamed.get(t, t) for t in node.inputs]
        if among is not None and node.name not in among:
            continue
        key = _key(node)
        first = seen.get(key)
        if first is None or any(t in outputs for t in node.outputs) or any(
                graph.tensors[a].dtype != graph.tensors[b].dtype
                or tuple(graph.tensors[a].shape) != tuple(graph.tensors[b].shape)
                for a, b in zip(node.outputs, first.outputs)):
            seen.setdefault(key, node)
            continue
        renamed.update(zip(node.outputs, first.outputs))
        dropped.append(node)
    remove_nodes(graph, dropped)
    return len(dropped)
