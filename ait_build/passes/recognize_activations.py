"""Activations written out as arithmetic become the one op they compute, so that epilogue fusion
can put them into the GEMM or conv before them: GPT-2's tanh GELU
(`0.5 * x * (1 + tanh(0.79788 * (x + 0.044715 * x^3)))`, as its `NewGELUActivation` writes it),
`x * sigmoid(x)`, `x * 0.5 * (1 + erf(x / sqrt(2)))` and the like.

A group is recognised by value, not by its spelling: the elementwise ops that read one tensor and
nothing else (scalars aside) are evaluated on probe points with their NumPy references and
compared with each activation's reference, so any ordering of the same arithmetic matches. Only
the group's last value may be read outside it; the replacement keeps its name and dtype.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.graph import Graph, Node
from ait_build.ops.registry import get_op
from ait_build.passes.fuse_elementwise import fusable, grow, program
from ait_build.passes.rewrite import Uses, remove_nodes, summary

# (op, attrs) the epilogues take (fuse_epilogue.ACTIVATION_OPS), tried in order
CANDIDATES = (("gelu", {"approximate": "tanh"}), ("gelu", {"approximate": "none"}),
              ("silu", {}), ("sigmoid", {}), ("tanh", {}), ("hardswish", {}))
# dense over the range where the candidates differ, and far out where they saturate
PROBES = np.concatenate([np.linspace(-8.0, 8.0, 321), [-30.0, -16.0, 16.0, 30.0]])
RTOL, ATOL = 1e-5, 1e-6  # an importer's constants may be rounded to float32


def _activation(steps) -> tuple | None:
    """The (op, attrs) whose reference the one-input program `steps` computes, or None."""
    try:
        return _evaluated(steps)  # a model repeats its blocks' programs: each evaluated once
    except TypeError:  # an attribute that cannot be a key
        return _evaluate(steps)


def _evaluate(steps) -> tuple | None:
    try:
        with np.errstate(all="ignore"):
            y = get_op("fused_elementwise").reference({"program": steps}, [PROBES], {})[0]
    except (OpError, TypeError, ValueError):  # a step that takes no float64 probes
        return None
    if np.shape(y) != PROBES.shape:
        return None
    for op, attrs in CANDIDATES:
        want = get_op(op).reference(attrs, [PROBES], {})[0]
        if np.allclose(y, want, rtol=RTOL, atol=ATOL):
            return op, attrs
    return None


_evaluated = lru_cache(maxsize=4096)(_evaluate)


def _reads_only(group: list, t: str) -> list:
    """The members computed from `t` alone, in order."""
    have, members = {t}, []
    for node in group:
        if all(i in have for i in node.inputs):
            members.append(node)
            have.add(node.output)
    return members


def _ancestors(members: list, sink: Node) -> list:
    """`sink` and the members it depends on, in order."""
    made = {n.output: n for n in members}
    keep, todo = {id(sink)}, [sink]
    while todo:
        for i in todo.pop().inputs:
            if i in made and id(made[i]) not in keep:
                keep.add(id(made[i]))
                todo.append(made[i])
    return [n for n in members if id(n) in keep]


def _match(graph: Graph, uses: Uses, group: list) -> tuple | None:
    """(nodes, input, op, attrs) of the largest written-out activation in `group`, or None."""
    outputs = {n.output for n in group}
    seen = []
    for node in group:
        seen += [t for t in node.inputs if t not in outputs and t not in seen]
    for t in seen:
        members = _reads_only(group, t)
        for sink in reversed(members):
            nodes = _ancestors(members, sink)
            inner, ids = [n.output for n in nodes if n is not sink], {id(n) for n in nodes}
            if len(nodes) < 2 or any(id(r) not in ids for o in inner for r in uses.of(o)) or \
                    any(o in graph.outputs for o in inner):
                continue
            src, out = graph.tensors[t], graph.tensors[sink.output]
            if tuple(src.shape) != tuple(out.shape) or src.dtype != out.dtype:
                continue
            found = _activation(program(graph, nodes)[1])
            if found is not None:
                return nodes, t, *found
    return None


def run(graph: Graph, target) -> str:
    replaced = 0
    taken: set = set()
    uses = Uses(graph)
    # Groups grow towards earlier nodes and the roots are taken last first, so a replacement
    # (the activation node in its sink's place, reading the same input the nodes it replaces
    # read) changes nothing a later match looks at: the readers and the order are taken once,
    # and the replaced nodes all go at the end (per match, each was a pass over the graph)
    order = {id(n): i for i, n in enumerate(graph.nodes)}
    dead = []
    for root in reversed(list(graph.nodes)):
        if id(root) in taken or not fusable(root):
            continue
        group = grow(graph, uses, root, taken, order)
        taken.update(id(n) for n in group)
        found = _match(graph, uses, group) if len(group) >= 2 else None
        if found is None:
            continue
        nodes, t, op, attrs = found
        sink = nodes[-1]
        graph.nodes[order[id(sink)]] = Node(sink.name, op, [t], list(sink.outputs), dict(attrs),
                                            {}, sink.loc)
        dead += nodes[:-1]
        replaced += 1
    remove_nodes(graph, dead)
    return summary((replaced, "written-out activations recognised"))
