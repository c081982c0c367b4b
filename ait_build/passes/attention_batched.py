"""Attention written with the heads folded into the batch, for fuse_attention: three-dimensional
`[batch * heads, s, d]` matmuls, as torch.nn.MultiheadAttention computes it when its weights are
asked for (its default: `need_weights=True`), DeBERTa and fairseq-style code.

From each matmul operand back to the tensor x it was cut from (`[..., h*d]`), every permute,
reshape and scalar factor in between (each read only by the next) is replayed on named parts of
x's axes: x's axes before the last, and the last split into `h` and `d`. A reshape regroups
those parts (it may not cut one), a permute reorders them. The operand matches when it ends as
`[batch parts..., h] x s x d` (K: `... x d x s`): every part of x but `h` and `d` a batch part or
the sequence; the heads may also be an axis of x of their own (BLOOM's [b, s, h, 3, d] qkv).
The attention then reads x permuted to `[batch parts..., s, h*d]` (a copy unless already so)
and flattened. Its output is replayed the same way through the permutes and reshapes
that follow p v, up to the tensor the next op reads, and made from the attention's rows by a
reshape (a permute between when the parts come in another order: nn.MultiheadAttention's
sequence-first output).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim, numel
from ait_build.ir.graph import Graph, Node
from ait_build.passes.attention_heads import new_node
from ait_build.passes.attention_scores import (attention_name, bias_tensor, find_scores,
                                               forget, probabilities, pv_matmul, split_scores,
                                               with_term)
from ait_build.passes.rewrite import Uses, free_name, infer, new_value, permute_dims

ONE = Dim.of(1)
MOVES = ("permute", "transpose", "reshape")


@dataclass(frozen=True)
class Traced:
    """An operand [batch * h, s, d] cut from x: `order` puts x's axes as [batch..., s, h*d]."""

    x: str
    order: tuple
    batch: tuple  # the batch parts' sizes, in order
    seq: Dim
    heads: int
    head_dim: int

    def flat_shape(self) -> tuple:
        return numel(self.batch), self.seq, Dim.of(self.heads * self.head_dim)


def _regroup(axes: list, shape: tuple) -> list | None:
    """The parts of each axis after a reshape to `shape`, or None where it cuts a part."""
    parts = [p for axis in axes for p in axis if p[1] != ONE]
    out, i = [], 0
    for n in shape:
        group, size = [], ONE
        while size != n:
            if i == len(parts) or n.exact_div(size * parts[i][1]) is None:
                return None
            size = size * parts[i][1]
            group.append(parts[i])
            i += 1
        out.append(group)
    return out if i == len(parts) else None


def _replay(graph, nodes: list, axes: list) -> list | None:
    """The parts of each axis after `nodes` (first to last) on a tensor of `axes`."""
    for node in nodes:
        if node.op == "reshape":
            axes = _regroup(axes, tuple(graph.tensors[node.output].shape))
        elif node.op in ("permute", "transpose"):
            axes = [axes[i] for i in permute_dims(graph, node)]
        if axes is None:
            return None
    return axes


def _chain_back(uses, t, reader, factors):
    """(the tensor before them, the moves and scalar factors making `t` first to last, those of
    them that only the chain reads): the attention takes the last ones' place; DeBERTa reads q
    and k for its relative terms too, so the moves before those stay."""
    chain, mine = [], True
    while True:
        node = uses.made_by(t)
        if node is None:
            break
        scalar = node.attrs.get("scalar") if node.op in ("mul", "div") else None
        if node.op not in MOVES and (scalar is None or factors is None):
            break
        mine = mine and uses.only_reader(t) is reader
        if scalar is not None:
            factors.append(scalar if node.op == "mul" else 1.0 / scalar)
        chain.append((node, mine))
        reader, t = node, node.inputs[0]
    return t, [n for n, _ in chain[::-1]], [n for n, only in chain if only]


def operand(graph, uses, t, reader, head_dim: int, keys_last: bool, found: list,
            scales: list | None = None) -> Traced | None:
    """The Traced form of a 3-d attention matmul operand `t`, its moves added to `found` (and
    its scalar factors to `scales`), or None."""
    factors = [] if scales is not None else None
    x, chain, taken = _chain_back(uses, t, reader, factors)
    shape = graph.tensors[x].shape
    last = shape[-1] if shape else ONE
    if not chain or len(shape) < 2 or not last.is_static or last.value % head_dim:
        return None
    heads = last.value // head_dim
    axes = [[(i, d)] for i, d in enumerate(shape[:-1])] + [[("h", Dim.of(heads)),
                                                            ("d", Dim.of(head_dim))]]
    axes = _replay(graph, chain, axes)
    if axes is None or len(axes) != 3:
        return None
    batch, seq, depth = (axes[0], axes[2], axes[1]) if keys_last else axes
    if [p[0] for p in depth] != ["d"] or len(seq) != 1 or not batch:
        return None
    if batch[-1][0] == "h":  # the heads from x's last axis
        order = tuple(p[0] for p in batch[:-1]) + (seq[0][0], len(shape) - 1)
    elif heads == 1 and batch[-1][1].is_static:  # from an axis of x (BLOOM's [b, s, h, 3, d])
        heads = batch[-1][1].value
        order = tuple(p[0] for p in batch[:-1]) + (seq[0][0], batch[-1][0], len(shape) - 1)
    else:
        return None
    if any(isinstance(p, str) for p in order[:-1]):
        return None
    if list(order) != sorted(order):  # size-1 axes (dropped by the replay) go first
        order = tuple(i for i, d in enumerate(shape) if d == ONE and i not in order) + order
    else:
        order = tuple(range(len(shape)))  # in order already: a view
    found += taken
    if factors:
        scales += factors
    return Traced(x, order, tuple(p[1] for p in batch[:-1]), seq[0][1], heads, head_dim)


def packed(graph, uses, parts: tuple) -> tuple | None:
    """(qkv, nodes that go) when q, k and v are, in order and in place, the three slices of one
    [..., 3, h*d] view of qkv [..., 3*h*d] (nn.MultiheadAttention's in_proj): the attention
    reads qkv packed, flattened to [batch, s, 3*h*d]."""
    slices = [uses.made_by(t.x, "slice") for t in parts]
    if any(sl is None or sl.attrs["step"] != 1 or len(uses.of(sl.output)) != 1
           for sl in slices) or \
            any(t.order != tuple(range(len(t.order))) for t in parts):
        return None
    view = uses.made_by(slices[0].inputs[0], "reshape")
    if view is None or any(sl.inputs[0] != view.output for sl in slices) or \
            len(uses.of(view.output)) != 3:
        return None
    src, shape = graph.tensors[view.inputs[0]].shape, graph.tensors[view.output].shape
    width = parts[0].heads * parts[0].head_dim
    if len(shape) != len(src) + 1 or tuple(shape[:-2]) != tuple(src[:-1]) or \
            shape[-2] != Dim.of(3) or shape[-1] != Dim.of(width):
        return None
    for i, sl in enumerate(slices):
        if sl.attrs["axis"] % len(shape) != len(shape) - 2 or Dim.of(sl.attrs["start"]) != \
                Dim.of(i) or sl.attrs["end"] is None or Dim.of(sl.attrs["end"]) != Dim.of(i + 1):
            return None
    return view.inputs[0], slices + [view]


def input_nodes(graph, traced: Traced, names: set, like, x: str | None = None) -> tuple:
    """(tensor [batch, s, h*d], nodes to add): x permuted (when not in order) and flattened; or
    the packed `x` given, flattened to [batch, s, 3*h*d]."""
    made, flat = [], traced.flat_shape()
    if x is not None:
        flat = flat[:2] + (flat[2] * 3,)
    else:
        x = traced.x
        if traced.order != tuple(range(len(traced.order))):
            made.append(new_node(graph, names, "permute", [x], {"dims": traced.order}, like))
            x = made[-1].output
    if tuple(graph.tensors[x].shape) != flat:
        made.append(new_node(graph, names, "reshape", [x], {"shape": flat}, like))
    return (made[-1].output if made else x), made


def output(graph, uses, pv, q: Traced) -> tuple | None:
    """(moves after p v, the last of them, [(op, attrs)] making its output from the attention's
    [batch, s, h*d] rows) or None."""
    n, s, d = graph.tensors[pv.output].shape
    batch = [(f"b{i}", size) for i, size in enumerate(q.batch)]
    axes = [batch + [("h", Dim.of(q.heads))], [("s", s)], [("d", d)]]
    chain, t = [], pv.output
    while True:
        node = uses.only_reader(t)
        if node is None or node.op not in MOVES:
            break
        moved = _replay(graph, [node], axes)
        if moved is None:
            break
        chain.append(node)
        axes, t = moved, node.output
    if not chain:
        return None
    names = [p[0] for axis in axes for p in axis if p[1] != ONE]
    rows = [p[0] for p in batch if p[1] != ONE] + ["s", "h", "d"]
    if sorted(names) != sorted(rows) or names[-2:] != ["h", "d"]:
        return None  # h*d must stay the innermost, whole
    steps, outer, wanted = [], rows[:-2], names[:-2]
    if wanted != outer:  # the parts in another order: rows as [batch..., s, h*d], permuted
        sizes = dict(batch + [("s", s)])
        rows_shape = tuple(sizes[p] for p in outer) + (Dim.of(q.heads) * d,)
        steps.append(("reshape", {"shape": rows_shape}))
        steps.append(("permute", {"dims": tuple(outer.index(p) for p in wanted) + (len(outer),)}))
    steps.append(("reshape", {"shape": tuple(graph.tensors[t].shape)}))
    return chain, chain[-1], steps


def batch_bias(graph, bias: str, batch: tuple, heads: int, names: set, like) -> tuple | None:
    """(bias [batch or 1, h or 1, q, k], nodes to add) for a bias of the [batch * h, q, k]
    scores; None when it cannot be seen so."""
    shape = graph.tensors[bias].shape
    if len(shape) < 3 or shape[0] == ONE:
        return bias, []  # broadcasts along batch and heads as it is
    if len(shape) > 3:
        return None
    if shape[0] != numel(batch) * heads:
        return None
    node = new_node(graph, names, "reshape", [bias],
                    {"shape": (numel(batch), Dim.of(heads)) + tuple(shape[1:])}, like)
    return node.output, [node]


def match(graph: Graph, uses: Uses, softmax: Node, names: set) -> tuple | None:
    """fuse_attention.match() for [batch * heads, q, k] scores, the softmax taken over them or
    over their [b, h, q, k] view (split_scores): (attention node, nodes it replaces, nodes to
    insert before it, nodes to insert after it), or None."""
    found, outer, probs = [softmax], None, None
    if len(graph.tensors[softmax.output].shape) == 3:
        scores = find_scores(graph, uses, softmax.inputs[0], softmax, 1.0, None, found) \
            if softmax.attrs["axis"] % 3 == 2 else None
    else:
        split = split_scores(graph, uses, softmax, found) if softmax.attrs["axis"] % 4 == 3 \
            else None
        if split is None:
            return None
        t, reader, outer, probs = split
        scores = find_scores(graph, uses, t, reader, 1.0, None, found)
    if scores is None or scores[3] is not None:
        return None
    mm, scale, bias, _ = scores
    head_dim = graph.tensors[mm.inputs[0]].shape[-1]
    if not head_dim.is_static:
        return None
    scales = []
    q = operand(graph, uses, mm.inputs[0], mm, head_dim.value, False, found,
                                  scales)
    k = operand(graph, uses, mm.inputs[1], mm, head_dim.value,
                                  not mm.attrs["transpose_b"], found, scales)
    pv = pv_matmul(uses, probs or probabilities(uses, softmax, bias, found))
    if q is None or k is None or pv is None:
        return None
    found.append(pv)
    v = operand(graph, uses, pv.inputs[1], pv, head_dim.value, False, found)
    out = output(graph, uses, pv, q) if v is not None else None
    if out is None or len({(t.batch, t.heads) for t in (q, k, v)}) != 1:
        return None
    chain, merge, steps = out
    found += chain  # the last: where the attention goes
    local, added, inputs = set(names), [], []
    qkv = packed(graph, uses, (q, k, v))
    if qkv is not None:  # one [.., 3, h*d] view of the in-projection, read packed
        tensor, added = input_nodes(graph, q, local, softmax, x=qkv[0])
        inputs, found = [tensor], qkv[1] + found
    for traced in (q, k, v) if qkv is None else ():
        tensor, made = input_nodes(graph, traced, local, softmax)
        inputs.append(tensor)
        added += made
    bias, more = bias_tensor(graph, uses, bias, local, softmax)
    added += more
    made = batch_bias(graph, bias, q.batch, q.heads, local, softmax) \
        if bias is not None else (None, [])
    if made is None:
        forget(graph, added)
        return None
    bias, more = made
    added += more
    if outer is not None:  # the mask after the split, in [b, h or 1, q, k]
        bias, more = bias_tensor(graph, uses, with_term(bias, outer), local, softmax)
        added += more
    name = attention_name(local, softmax)
    local.add(name)
    attrs = {"num_heads": q.heads, "head_dim": q.head_dim,
             "scale": float(scale * np.prod(scales)), "causal": False, "packed": qkv is not None}
    node = Node(name, "multi_head_attention", inputs + ([bias] if bias else []), [], attrs, {},
                softmax.loc)
    try:
        (ttype,) = infer(graph, node)
    except OpError:
        forget(graph, added)
        return None
    node.outputs = [new_value(graph, name, ttype, softmax)]
    after, last = [], node
    for op, step_attrs in steps:  # a reshape to the shape it already has goes
        step = Node(free_name(local, f"{name}.{op}"), op, list(last.outputs), [], step_attrs, {},
                    merge.loc)
        (out,) = infer(graph, step)
        if op == "reshape" and tuple(out.shape) == tuple(graph.tensors[last.outputs[0]].shape):
            continue
        local.add(step.name)
        step.outputs = [new_value(graph, step.name, out, softmax)]
        after.append(step)
        last = step
    del graph.tensors[last.outputs[0]]
    last.outputs = list(merge.outputs)
    names |= local
    return node, found, added, after
