"""Dead-code elimination and no-op removal.

A no-op is a node whose output equals one input: `identity`, a reshape/expand/slice/pad that keeps
the shape, a permute by the identity, a cast to the same dtype, `x + 0`, `x * 1`, a one-input
concat. Its readers read the input instead. Then every node none of whose outputs reaches a graph
output is dropped (a spec may compute things it never returns, and later passes leave orphans).
"""

from __future__ import annotations

from ait_build.ir.graph import Graph
from ait_build.passes.rewrite import is_value, rename_tensor, replace_uses, summary

_SAME_SHAPE_OPS = ("reshape", "flatten", "expand", "slice", "split")
_NEUTRAL_SCALAR = {"add": 0.0, "sub": 0.0, "mul": 1.0, "div": 1.0}


def passthrough(graph: Graph, node) -> str | None:
    """The input a no-op node returns unchanged, else None."""
    if len(node.outputs) != 1 or not node.inputs:
        return None
    src, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if src.dtype != out.dtype or tuple(src.shape) != tuple(out.shape):
        return None
    op, attrs = node.op, node.attrs
    if op in ("identity", "cast") or op in _SAME_SHAPE_OPS:
        return src.name
    if op == "permute" and list(attrs["dims"]) == list(range(len(src.shape))):
        return src.name
    if op == "transpose" and attrs["dim0"] % len(src.shape) == attrs["dim1"] % len(src.shape):
        return src.name
    if op == "pad" and not any(attrs["pads"]):
        return src.name
    if op == "concat" and len(node.inputs) == 1:
        return src.name
    if op in _NEUTRAL_SCALAR and attrs.get("scalar") == _NEUTRAL_SCALAR[op]:
        return src.name
    return None


def remove_noops(graph: Graph) -> int:
    removed = 0
    for node in list(graph.nodes):
        src = passthrough(graph, node)
        if src is None:
            continue
        out = node.output
        if out not in graph.outputs:
            graph.nodes.remove(node)
            replace_uses(graph, out, src)
        elif is_value(graph, src) and src not in graph.outputs:
            # the output keeps its name: the node making `src` now writes it directly
            graph.nodes.remove(node)
            del graph.tensors[out]
            rename_tensor(graph, src, out)
        else:
            continue  # an output that is a copy of an input must stay a copy
        removed += 1
    return removed


def remove_dead(graph: Graph) -> int:
    live = set(graph.outputs)
    keep = []
    for node in reversed(graph.nodes):
        if live.intersection(node.outputs):
            keep.append(node)
            live.update(node.inputs)
    dropped = len(graph.nodes) - len(keep)
    graph.nodes = keep[::-1]
    return dropped


def run(graph: Graph, target) -> str:
    noops = remove_noops(graph)
    dead = remove_dead(graph)
    graph.remove_unused_tensors()
    return summary((noops, "no-op nodes removed"), (dead, "dead nodes removed"))

