"""Attention scores in another layout than [batch, heads, queries, keys], for fuse_attention.

torchvision's Swin, as imported, permutes q k^T to [queries, keys, batch, heads] (the importer
keeps the layout the next op wants), adds the relative position bias there, splits the batch
(images x windows) to add the shifted-window mask per window, merges it back, takes the softmax
over the keys axis and permutes back for p v:

    s = permute(matmul(qh, kt), [2, 3, 0, 1]) + relpos            # [N, N, B*W, H] + [N, N, 1, H]
    s = reshape(reshape(s, [N, N, B, W, H]) + mask, [N, N, B*W, H])   # mask [N, N, 1, W, 1]
    p = permute(softmax(s, axis=1), [2, 3, 0, 1])

`permuted_scores` follows such a chain (a product with a factor per head, Swin V2's logit
scale, included), naming every axis of every tensor on it (`b`, `h`, `q`,
`k`, and `images` x `windows` while the batch is split), and `bias` turns the added tensors into
one bias in the attention's own layout: `[windows, heads, queries, keys]` read with
`bias_period = windows` when a term is per window, else `[1 or batch, heads or 1, ...]`. Terms
computed from weights alone (Swin's both are) are summed into one new weight at build time; others (of the
scores' rank, where the batch is not split) get a permute (and adds) in the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ait_build.ir.dims import Dim
from ait_build.ir.graph import Graph, Node
from ait_build.passes.rewrite import (Uses, add_weight, free_name, infer, new_value, permute_dims,
                                      run_node)

CANONICAL = ["b", "h", "q", "k"]
SPLIT = ["images", "windows"]


@dataclass
class Scores:
    matmul: Node  # q k^T, [b, h, q, k]
    scale: float
    head_scale: np.ndarray | None = None  # a factor per head (Swin V2's logit scale)
    terms: list = field(default_factory=list)  # (tensor, labels of the tensor it was added to)
    nodes: list = field(default_factory=list)  # between the matmul and p v, softmax included
    probs: str = ""  # what p v reads


def _reshaped(labels: list, src: tuple, dst: tuple) -> list | None:
    """Labels after a reshape that splits the batch into images x windows or merges them."""
    if tuple(src) == tuple(dst):
        return labels
    if len(dst) == len(src) + 1:  # split
        for i, label in enumerate(labels):
            if label == "b" and src[:i] == dst[:i] and src[i + 1:] == dst[i + 2:] and \
                    Dim.of(src[i]) == Dim.of(dst[i]) * dst[i + 1]:
                return labels[:i] + SPLIT + labels[i + 1:]
    if len(dst) + 1 == len(src):  # merge
        for i in range(len(labels) - 1):
            if labels[i:i + 2] == SPLIT and src[:i] == dst[:i] and src[i + 2:] == dst[i + 1:]:
                return labels[:i] + ["b"] + labels[i + 2:]
    return None


def _chain(uses: Uses, t: str, reader: Node) -> list | None:
    """Nodes from the scores matmul up to `t` (read only by `reader`), last first."""
    node = uses.made_by(t)
    if node is None or uses.only_reader(t) is not reader:
        return None
    if node.op == "matmul":
        ok = node.attrs["activation"] == "none" and len(node.inputs) == 2
        return [node] if ok else None
    if node.op in ("permute", "transpose", "reshape") or \
            (node.op in ("mul", "div") and node.attrs.get("scalar") is not None):
        rest = _chain(uses, node.inputs[0], node)
    elif node.op in ("add", "mul") and node.attrs.get("scalar") is None:
        rest = _chain(uses, node.inputs[0], node) or _chain(uses, node.inputs[1], node)
    else:
        return None
    return [node] + rest if rest else None


def permuted_scores(graph: Graph, uses: Uses, softmax: Node) -> Scores | None:
    """The chain from q k^T through softmax to what p v reads, when the scores leave the canonical
    layout on the way (a plain [b, h, q, k] chain is fuse_attention's own)."""
    chain = _chain(uses, softmax.inputs[0], softmax)
    if chain is None:
        return None
    mm = chain[-1]
    if len(graph.tensors[mm.output].shape) != 4:
        return None
    scores = Scores(mm, float(mm.attrs["alpha"]), nodes=list(chain) + [softmax])
    labels, t, seen_other = list(CANONICAL), mm.output, False
    for node in reversed(chain[:-1]):
        if node.op in ("permute", "transpose"):
            labels = [labels[p] for p in permute_dims(graph, node)]
        elif node.op == "reshape":
            labels = _reshaped(labels, graph.tensors[t].shape, graph.tensors[node.output].shape)
        elif node.op in ("mul", "div"):
            if scores.terms:
                return None  # a bias added before the scale would be scaled too
            factor = node.attrs["scalar"]
            if factor is None:
                other = node.inputs[1] if node.inputs[0] == t else node.inputs[0]
                factor = head_factors(graph, uses, other, labels)
                if factor is None:
                    return None
                scores.head_scale = factor * (1 if scores.head_scale is None else scores.head_scale)
            else:
                scores.scale *= factor if node.op == "mul" else 1.0 / factor
        else:  # add
            other = node.inputs[1] if node.inputs[0] == t else node.inputs[0]
            scores.terms.append((other, list(labels)))
        if labels is None:
            return None
        seen_other |= labels != CANONICAL
        t = node.output
    axis = softmax.attrs["axis"] % len(labels)
    if not seen_other or labels[axis] != "k" or set(labels) != set(CANONICAL):
        return None
    t = softmax.output
    while labels != CANONICAL:  # permutes back to [b, h, q, k] for p v
        node = uses.only_reader(t)
        if node is None or node.op not in ("permute", "transpose"):
            return None
        labels = [labels[p] for p in permute_dims(graph, node)]
        scores.nodes.append(node)
        t = node.output
    scores.probs = t
    return scores


def head_factors(graph: Graph, uses: Uses, tensor: str, labels: list) -> np.ndarray | None:
    """The factor per head of a product of the scores (labelled `labels`) with `tensor`, when
    it is known at build time and varies along the heads axis only, else None."""
    shape, axis = _aligned(graph, tensor, labels)
    if len(shape) != len(labels) or any(d != Dim.of(1) for i, d in enumerate(shape)
                                        if i != axis.get("h")):
        return None
    value = _build_time_value(graph, uses, tensor)
    if value is None:
        return None
    return np.asarray(value, np.float64).reshape(-1)


def _aligned(graph: Graph, tensor: str, labels: list) -> tuple:
    """The term's shape padded on the left to the labels' rank, and its label -> axis."""
    shape = tuple(graph.tensors[tensor].shape)
    shape = (Dim.of(1),) * (len(labels) - len(shape)) + shape
    return shape, {label: i for i, label in enumerate(labels)}


def _period(graph: Graph, terms: list) -> int | None:
    """Windows of a per-window term (0: none), None for a term that depends on the image."""
    period = 0
    for tensor, labels in terms:
        shape, axis = _aligned(graph, tensor, labels)
        if "images" not in axis:
            continue
        images, windows = shape[axis["images"]], shape[axis["windows"]]
        if images != Dim.of(1) or not windows.is_static or period not in (0, windows.value):
            return None
        period = windows.value if windows.value > 1 else period
    return period


def _build_time_value(graph: Graph, uses: Uses, tensor: str):
    """The value of a tensor computed from weights alone (Swin's relative position bias is a
    gather from its table, which constant folding leaves alone for growing 4-7 times), or None."""
    node = uses.made_by(tensor)
    if node is None or len(node.outputs) != 1:
        return None
    if node.op == "parameter":
        return graph.weights.get(node.weights["value"])
    if not all(d.is_static for d in graph.tensors[tensor].shape):
        return None
    inputs = [_build_time_value(graph, uses, t) for t in node.inputs]
    if not inputs or any(v is None for v in inputs):
        return None
    return run_node(graph, node, inputs)[0]


def bias(graph: Graph, uses: Uses, names: set, terms: list, like: Node) -> tuple | None:
    """(bias tensor or None, bias_period, nodes to insert before the attention) for the terms."""
    if not terms:
        return None, 0, []
    period = _period(graph, terms)
    if period is None:
        return None
    values = [_build_time_value(graph, uses, t) for t, _ in terms]
    if all(v is not None for v in values):
        total = None
        for (tensor, labels), value in zip(terms, values):
            shape, axis = _aligned(graph, tensor, labels)
            value = value.reshape([d.value for d in shape])
            batch = axis.get("b", axis.get("windows"))
            order = [batch, axis["h"], axis["q"], axis["k"]]
            rest = [i for i in range(len(labels)) if i not in order]  # images: size 1
            value = np.transpose(value, order + rest).reshape([value.shape[i] for i in order])
            total = value if total is None else total + value
        name = free_name(names, f"{like.name.rpartition('.')[0] or like.name}.attention_bias")
        names.add(name)
        weight = add_weight(graph, f"{name}.folded_weight", total.astype(np.float32), graph.dtype)
        node = Node(name, "parameter", [], [], {"shape": tuple(Dim.of(int(n)) for n in total.shape),
                                                "init": "normal"},
                    {"value": weight}, like.loc)
        (ttype,) = infer(graph, node)
        node.outputs = [new_value(graph, name, ttype, like)]
        return node.output, period, [node]
    if period:
        return None  # a per-window term computed at run time: not taken
    made, summed = [], None
    for tensor, labels in terms:
        if len(graph.tensors[tensor].shape) != len(labels):
            return None  # would need a reshape first: not taken
        order = tuple(labels.index(label) for label in CANONICAL)
        if order != tuple(range(4)):
            tensor = _add(graph, names, made, "permute", [tensor], {"dims": order}, like)
        summed = tensor if summed is None else _add(graph, names, made, "add", [summed, tensor], {}, like)
    return summed, 0, made


def _add(graph: Graph, names: set, made: list, op: str, inputs: list, attrs: dict, like: Node) -> str:
    name = free_name(names, f"{like.name.rpartition('.')[0] or like.name}.attention_bias")
    names.add(name)
    node = Node(name, op, inputs, [], attrs, {}, like.loc)
    (ttype,) = infer(graph, node)
    node.outputs = [new_value(graph, name, ttype, like)]
    made.append(node)
    return node.output
