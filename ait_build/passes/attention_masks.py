"""Attention masks as the kernels want them: the causal part as the kernel's causal mode, the
always-true parts gone, the rest as small a bias as it can be.

An attention bias written as `where(mask, 0, -inf)` (PyTorch's scaled_dot_product_attention with a
boolean mask; -inf or any fill at or below -1e4, whose exponential is 0 in float32 beside scores
of a sane size) is rewritten when the mask is an and of terms of which some are, for every size
of the dims (mask_values.py):

- always true (DistilBERT's `q >= 0`, GPT-2's packed-sequence test on an arange): dropped;
- the causal mask `kv <= q` over the scores' last two axes, on square scores: dropped, and the
  attention becomes `causal: true` (the kernels skip the masked key tiles);

the other terms (a padding mask from an input) stay and-ed in a new `where`, whose shape is only
what they broadcast to: DistilBERT's [batch, 1, seq, seq] bias becomes [batch, 1, 1, seq]. With
no term left the attention has no bias. Attention that masks its scores with `where(mask,
scores, fill)` (the older GPT-2 code) is fused by fuse_attention into this form first.

The same holds for `where(mask, values, fill)` with other values than 0, read through permutes
(T5's position bias, masked by an all-true [batch, 1, seq, seq] mask when no attention mask is
given): with no term left the bias is the values themselves, permuted the same way (a weight's
permuted copy when they are a weight), one bias for every layer instead of a `where` over the
batch in each.
"""

from __future__ import annotations

import math

import numpy as np

from ait_build.ir.dims import Dim
from ait_build.ir.graph import Graph, Node
from ait_build.ops.opdef import TType
from ait_build.passes.fold_constants import parameter_node
from ait_build.passes.mask_values import CAUSAL, TRUE, Const, MaskValues
from ait_build.passes.rewrite import (Uses, add_weight, constant_fill, free_name, infer,
                                      new_value, node_names, permute_dims, position,
                                      remove_nodes, summary)

MASKED = -1e4  # a fill at or below this masks a score (exp underflows to 0 in float32)
LAYOUT = ("permute", "transpose")


def masked_bias(uses: Uses, bias: str):
    """(where node, mask, layout) when `bias` is where(mask, values, fill <= MASKED) seen through
    permutes (`layout`: those nodes, the one applied first first), else None."""
    layout = []
    node = uses.made_by(bias)
    while node is not None and node.op in LAYOUT:
        layout.insert(0, node)
        node = uses.made_by(node.inputs[0])
    if node is None or node.op != "where":
        return None
    masked = constant_fill(uses, node.inputs[2])
    if masked is None or not (masked <= MASKED or math.isinf(masked) and masked < 0):
        return None
    return node, node.inputs[0], layout


def and_terms(uses: Uses, mask: str) -> list:
    """The tensors `mask` is the logical and of (itself when it is no and)."""
    node = uses.made_by(mask, "logical_and")
    if node is None:
        return [mask]
    return [t for x in node.inputs for t in and_terms(uses, x)]


class Rewriter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.uses = Uses(graph)
        self.values = MaskValues(graph, self.uses)
        self.names = node_names(graph)
        self.made: dict = {}  # (kept terms, fills) -> the new bias, shared by every attention
        self.dropped: list = []  # the old `where`s, removed when nothing reads them any more
        self.causal = self.smaller = self.removed = 0

    def rewrite(self, attn: Node) -> None:
        n_qkv = 1 if attn.attrs["packed"] else 3
        if len(attn.inputs) <= n_qkv:
            return
        found = masked_bias(self.uses, attn.inputs[n_qkv])
        if found is None:
            return
        where, mask, layout = found
        shape = self.graph.tensors[attn.inputs[0]].shape
        square = attn.attrs["packed"] or self.graph.tensors[attn.inputs[1]].shape[1] == shape[1]
        terms = and_terms(self.uses, mask)
        values = [self.values.of(t) for t in terms]
        if Const(False) in values:
            return  # everything masked: leave it as written
        causal = square and CAUSAL in values
        keep = [t for t, v in zip(terms, values) if v != TRUE and not (causal and v == CAUSAL)]
        zero = constant_fill(self.uses, where.inputs[1]) == 0
        if len(keep) == len(terms):
            return
        if (layout or not zero) and not self.can_lay_out(attn, where, keep, layout, zero):
            return
        attn.attrs["causal"] = attn.attrs["causal"] or causal
        self.causal += causal
        self.dropped.append(layout[-1] if layout else where)
        if not keep and zero:
            attn.inputs = attn.inputs[:n_qkv]
            self.removed += 1
            return
        kept = self.bias(attn, where, keep) if keep else where.inputs[1]
        attn.inputs = attn.inputs[:n_qkv] + [self.laid_out(attn, kept, layout)]
        if keep:
            self.smaller += 1
        else:
            self.removed += 1

    def can_lay_out(self, attn: Node, where: Node, keep: list, layout: list, zero: bool) -> bool:
        """Whether the new bias can be made when the values are not 0 or the `where` is seen
        through permutes: a bias read per batch (bias_period) keeps its form, and `layout`'s
        permutes need the rank they had (a weight's own rank is padded at build time); with
        every term dropped and values of 0 there is no bias to lay out."""
        if attn.attrs.get("bias_period"):
            return False
        if not layout or (zero and not keep):
            return True
        values = where.inputs[1]
        if not keep and self.uses.made_by(values, "parameter") is not None:
            return True
        kept = keep + where.inputs[1:] if keep else [values]
        rank = len(self.graph.tensors[where.output].shape)
        return max(len(self.graph.tensors[t].shape) for t in kept) == rank

    def bias(self, attn: Node, where: Node, keep: list) -> str:
        """where(and of `keep`, values, fill), made once per set of terms, just before `attn`."""
        # each layer has its own fills
        values = where.inputs[1]
        key = (tuple(keep), 0.0 if constant_fill(self.uses, values) == 0 else values,
               constant_fill(self.uses, where.inputs[2]))
        if key in self.made:
            return self.made[key]
        mask = keep[0]
        for term in keep[1:]:
            mask = self.add(attn, "logical_and", [mask, term], where.name + ".mask")
        made = self.add(attn, "where", [mask] + where.inputs[1:], where.name + ".kept")
        self.made[key] = made
        return made

    def laid_out(self, attn: Node, tensor: str, layout: list) -> str:
        """`tensor` permuted as `layout` permuted the where's output: a weight's permuted copy
        (computed now), else permute nodes; made once per tensor and layout."""
        rank = len(self.graph.tensors[layout[0].inputs[0]].shape) if layout else 0
        perms = tuple(permute_dims(self.graph, p) for p in layout)
        key = (tensor, perms)
        if not layout or key in self.made:
            return self.made.get(key, tensor)
        param = self.uses.made_by(tensor, "parameter")
        if param is not None:
            value = self.graph.weights.get(param.weights["value"])
            value = value.reshape((1,) * (rank - value.ndim) + value.shape)
            for dims in perms:
                value = value.transpose(dims)
            value = np.ascontiguousarray(value)
            like = self.graph.tensors[tensor]
            weight = add_weight(self.graph, f"{param.name}.laid_out_weight", value, like.dtype,
                                like)
            name = free_name(self.names, f"{param.name}.laid_out")
            self.names.add(name)
            ttype = TType(tuple(Dim.of(int(n)) for n in value.shape), like.dtype)
            out = new_value(self.graph, name, ttype, attn)
            node = parameter_node(name, out, weight, ttype.shape, attn)
            self.graph.nodes.insert(position(self.graph, attn), node)
        else:
            out = tensor
            for p, dims in zip(layout, perms):
                out = self.add(attn, "permute", [out], p.name + ".bias", {"dims": dims})
        self.made[key] = out
        return out

    def add(self, before: Node, op: str, inputs: list, name: str, attrs=None) -> str:
        name = free_name(self.names, name)
        self.names.add(name)
        node = Node(name, op, inputs, [], dict(attrs or {}), {}, before.loc)
        (ttype,) = infer(self.graph, node)
        node.outputs = [new_value(self.graph, name, ttype, before)]
        self.graph.nodes.insert(position(self.graph, before), node)
        return node.output

    def remove_dead(self) -> None:
        """The dropped `where`s and whatever only they read, back to the graph's inputs."""
        dead, todo = [], list(self.dropped)
        while todo:
            uses = Uses(self.graph)
            todo = [n for n in todo if not any(uses.of(t) or t in uses.outputs for t in n.outputs)
                    and all(n is not d for d in dead)]
            if not todo:
                break
            dead += todo
            producers = [uses.made_by(t) for n in todo for t in n.inputs]
            remove_nodes(self.graph, todo)
            todo = [p for p in producers if p is not None]


def run(graph: Graph, target) -> str:
    rewriter = Rewriter(graph)
    for attn in [n for n in graph.nodes if n.op == "multi_head_attention"]:
        rewriter.rewrite(attn)
    rewriter.remove_dead()
    return summary((rewriter.causal, "attention masks run as causal"),
                   (rewriter.smaller, "attention biases made smaller"),
                   (rewriter.removed, "always-true attention masks dropped"))
