"""Elementwise fusion: a connected group of elementwise ops (a chain, or a small DAG such as a
written-out GELU or an attention-mask computation) becomes one `fused_elementwise` node whose
program replays the group (see ops/fused.py), so its intermediates never reach memory.

Groups grow backwards from a root (the last op of the group in execution order): a producer joins
when it is elementwise, every reader of its output is already in the group, its output is not a
graph output, and its output has the root's shape. The last rule keeps the fused kernel from
recomputing a small tensor once per element of a larger one; broadcast inputs from outside the
group are fine. A lone op stays as it is.

Runs after epilogue and attention fusion, which take the adds and activations they can first.
"""

from __future__ import annotations

from ait_build.ir.graph import Graph, Node
from ait_build.ops.registry import get_op
from ait_build.passes.rewrite import Uses, infer, remove_nodes, summary

MAX_STEPS = 32  # keeps one kernel's register use and source size reasonable


def fusable(node: Node) -> bool:
    row = get_op(node.op)
    return row.elementwise and not row.internal and len(node.outputs) == 1


def grow(graph: Graph, uses: Uses, root: Node, taken: set, order: dict) -> list:
    """The group rooted at `root`, in execution order (`order`: id(node) -> its index, taken
    once: a search of the node list per member made large graphs quadratic)."""
    shape = tuple(graph.tensors[root.output].shape)
    members = {id(root): root}
    changed = True
    while changed and len(members) < MAX_STEPS:
        changed = False
        for member in list(members.values()):
            for t in member.inputs:
                p = uses.made_by(t)
                if p is None or id(p) in members or id(p) in taken or not fusable(p):
                    continue
                if t in graph.outputs or tuple(graph.tensors[t].shape) != shape:
                    continue
                if all(id(r) in members for r in uses.of(t)):
                    members[id(p)] = p
                    changed = True
    return sorted(members.values(), key=lambda n: order[id(n)])


def program(graph: Graph, group: list) -> tuple:
    """(external inputs, program steps) for a group in execution order."""
    inputs, refs, steps = [], {}, []
    for j, node in enumerate(group):
        args = []
        for t in node.inputs:
            if t not in refs:
                refs[t] = f"x{len(inputs)}"
                inputs.append(t)
            args.append(refs[t])
        row = get_op(node.op)
        pairs = tuple((a.name, node.attrs[a.name]) for a in row.attrs
                      if a.name in node.attrs and node.attrs[a.name] != a.default)
        steps.append((node.op, tuple(args), pairs))
        refs[node.output] = f"t{j}"
    return inputs, tuple(steps)


def run(graph: Graph, target) -> str:
    uses = Uses(graph)
    taken: set = set()
    groups = []
    order = {id(n): i for i, n in enumerate(graph.nodes)}
    for root in reversed(graph.nodes):
        if id(root) in taken or not fusable(root):
            continue
        group = grow(graph, uses, root, taken, order)
        if len(group) < 2:
            continue
        taken.update(id(n) for n in group)
        groups.append(group)
    dead = []  # removed at the end: one pass over the graph, not one per group
    for group in groups:
        root = group[-1]
        inputs, steps = program(graph, group)
        fused = Node(root.name, "fused_elementwise", inputs, list(root.outputs), {"program": steps},
                     {}, root.loc)
        (out,) = infer(graph, fused)
        assert tuple(out.shape) == tuple(graph.tensors[root.output].shape), root.name
        graph.nodes[order[id(root)]] = fused
        dead += group[:-1]
    remove_nodes(graph, dead)
    ops = sum(len(g) for g in groups)
    return summary((len(groups), f"elementwise groups fused ({ops} ops)"))
