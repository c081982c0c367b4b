"""Rotary position embeddings: transformers' apply_rotary_pos_emb, written out as the exports
give it,

    rot = concat([-x[..., d/2:], x[..., :d/2]], -1)        (rotate_half; the minus a mul by -1)
    y   = x * cos + rot * sin

becomes one `rotary_embedding(x, cos, sin)` (ops/attention.py): one elementwise pass where the
written-out form is two slices, a negation, a concat and a fused product-sum, five kernels for
q and five for k in every layer of a LLaMA-, Mistral- or Qwen-shaped decoder. The products may
come in either order; each intermediate must have no other reader.
"""

from __future__ import annotations

from ait_build.ir.dims import Dim
from ait_build.ir.graph import Graph
from ait_build.ops.opdef import broadcasts_to
from ait_build.passes.rewrite import Uses, remove_nodes, summary


def _half(uses: Uses, graph: Graph, t: str, x: str | None, first: bool):
    """The slice node making `t` when it is x's first (or second) half along the last axis."""
    node = uses.made_by(t, "slice")
    if node is None or (x is not None and node.inputs[0] != x) or node.attrs.get("step", 1) != 1:
        return None
    shape = graph.tensors[node.inputs[0]].shape
    d = shape[-1] if shape else None
    if d is None or not d.is_static or d.value % 2 or node.attrs["axis"] % len(shape) != len(shape) - 1:
        return None
    start, end = node.attrs["start"], node.attrs["end"]
    half = d.value // 2
    want = (0, half) if first else (half, d.value)
    got = (Dim.of(start), Dim.of(d.value) if end is None else Dim.of(end))
    return node if got == tuple(Dim.of(w) for w in want) else None


def _rotated(graph: Graph, uses: Uses, r: str):
    """(x, [nodes]) when `r` is rotate_half(x), each node read only on the way."""
    cat = uses.made_by(r, "concat")
    if cat is None or len(cat.inputs) != 2:
        return None
    rank = len(graph.tensors[r].shape)
    if cat.attrs["axis"] % rank != rank - 1:
        return None
    neg = uses.made_by(cat.inputs[0], "mul")
    if neg is None or neg.attrs.get("scalar") != -1:
        return None
    second = _half(uses, graph, neg.inputs[0], None, first=False)
    if second is None:
        return None
    x = second.inputs[0]
    first = _half(uses, graph, cat.inputs[1], x, first=True)
    nodes = [cat, neg, second, first]
    if first is None or any(uses.only_reader(n.output) is None for n in nodes[1:]):
        return None
    return x, nodes


def _product(uses: Uses, t: str):
    node = uses.made_by(t, "mul")
    if node is None or node.attrs.get("scalar") is not None or len(node.inputs) != 2 \
            or uses.only_reader(t) is None:
        return None
    return node


def match(graph: Graph, uses: Uses, add):
    """(x, cos, sin, nodes that go) when `add` is x * cos + rotate_half(x) * sin."""
    if add.attrs.get("scalar") is not None or len(add.inputs) != 2:
        return None
    products = [_product(uses, t) for t in add.inputs]
    if any(p is None for p in products):
        return None
    if products[0] is products[1]:
        return None
    for plain, turned in (products, products[::-1]):
        for r_at in (0, 1):
            found = _rotated(graph, uses, turned.inputs[r_at])
            if found is None or uses.only_reader(turned.inputs[r_at]) is not turned:
                continue
            x, nodes = found
            sin = turned.inputs[1 - r_at]
            if x not in plain.inputs or plain.inputs.count(x) != 1:
                continue
            cos = plain.inputs[1 - plain.inputs.index(x)]
            ttype = graph.tensors[x]
            if graph.tensors[add.output].shape != ttype.shape or not all(
                    broadcasts_to(graph.tensors[t].shape, ttype.shape)
                    and graph.tensors[t].dtype == ttype.dtype for t in (cos, sin)):
                continue
            return x, cos, sin, [plain, turned] + nodes
    return None


def run(graph: Graph, target) -> str:
    uses = Uses(graph)
    fused, gone = 0, []
    for add in [n for n in graph.nodes if n.op == "add"]:
        found = match(graph, uses, add)
        if found is None:
            continue
        x, cos, sin, nodes = found
        for n in nodes + [add]:
            uses.forget(n)
        add.op, add.inputs, add.attrs = "rotary_embedding", [], {}  # keeps its name and output
        for t in (x, cos, sin):
            uses.add_input(add, t)
        uses.set_outputs(add, add.outputs)
        gone += nodes
        fused += 1
    remove_nodes(graph, gone)
    return summary((fused, "rotary embeddings fused"))
