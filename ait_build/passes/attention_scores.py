"""The score side of an attention, for fuse_attention and attention_batched: from the softmax
back to the q k matmul through scalar and per-head scales, added biases (several summed into
one), masked fills and the NaN guard ONNX exports write after the softmax, then forward to the
p v matmul. Also the helpers both matchers share: the bias nodes a match makes, the attention's
name, and dropping what a failed match made."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ait_build.ir.graph import Graph, Node
from ait_build.passes import attention_heads, score_layouts
from ait_build.passes.attention_masks import MASKED
from ait_build.passes.rewrite import Uses, free_name, infer, new_value


def find_scores(graph, uses, t, reader, scale, bias, found, head=None):
    """(qk matmul, scale, bias, factor per head or None) when `t`, read by `reader`, is
    matmul(qh, kh) * scale [* head factors] + bias."""
    node = uses.made_by(t)
    if node is None or uses.only_reader(t) is not reader:
        return None
    scalar = node.attrs.get("scalar")
    plain = scale == 1.0 and head is None
    if node.op == "matmul":
        if node.attrs["activation"] != "none":
            return None
        if len(node.inputs) > 2:  # a bias already fused as the residual, before any scale
            if bias is not None or not plain:
                return None
            bias = node.inputs[2]
        rest = node, scale * node.attrs["alpha"], bias, head
    elif node.op in ("mul", "div") and scalar is not None:
        factor = scalar if node.op == "mul" else 1.0 / scalar
        rest = find_scores(graph, uses, node.inputs[0], node, scale * factor, bias, found, head)
    elif node.op == "mul" and len(node.inputs) == 2:  # Swin V2's logit scale, per head
        rest = None
        for a, b in (node.inputs, node.inputs[::-1]):
            factor = score_layouts.head_factors(graph, uses, b, score_layouts.CANONICAL)
            if factor is not None:
                head = factor * (1 if head is None else head)
                rest = find_scores(graph, uses, a, node, scale, bias, found, head)
                break
    elif node.op == "add" and scalar is None and plain:
        # softmax(x*s + bias) only: a bias added before the scale would be scaled too; more
        # than one term (MPNet: relative positions and the mask) are summed
        a, b = node.inputs
        rest = find_scores(graph, uses, a, node, scale, with_term(bias, b), found) or \
            find_scores(graph, uses, b, node, scale, with_term(bias, a), found)
    elif node.op == "where" and bias is None and plain and masks(uses, node.inputs[2]):
        # masked_fill of the scores (older GPT-2 code) with a fill that masks: the same softmax
        # as adding where(mask, 0, fill), made once the whole pattern matched
        rest = find_scores(graph, uses, node.inputs[1], node, scale, MaskedFill(*node.inputs[::2]), found)
    else:
        return None
    if rest is not None:
        found.append(node)
    return rest


def constant(uses, t):
    """The value of a `constant` node making `t`, else None."""
    node = uses.made_by(t, "constant")
    return float(node.attrs["value"]) if node is not None else None


def masks(uses, t) -> bool:
    """Whether `t` is a constant fill whose exponential is 0 beside any sane score."""
    value = constant(uses, t)
    return value is not None and value <= MASKED


@dataclass(frozen=True)
class MaskedFill:
    """where(mask, scores, fill) seen on the way to the scores: its bias is where(mask, 0, fill);
    `flipped`: where(mask, fill, scores) (DeBERTa's), the bias where(mask, fill, 0)."""

    mask: str
    fill: str
    flipped: bool = False

    def nodes(self, graph: Graph, uses: Uses, names: set, like: Node) -> tuple:
        """(bias tensor, [zero constant, where]) added to the graph's tensors."""
        fill = uses.made_by(self.fill)
        made = []
        picks = [self.mask, self.fill, None] if self.flipped else [self.mask, None, self.fill]
        for op, inputs, attrs in (("constant", [], dict(fill.attrs, value=0.0)),
                                  ("where", picks, {})):
            name = free_name(names, f"{like.name.rpartition('.')[0] or like.name}.mask_bias")
            names.add(name)
            inputs = [made[0].output if t is None else t for t in inputs]
            node = Node(name, op, inputs, [], attrs, {}, like.loc)
            (ttype,) = infer(graph, node)
            node.outputs = [new_value(graph, name, ttype, like)]
            made.append(node)
        return made[1].output, made


@dataclass(frozen=True)
class Summed:
    """Several terms added to the scores, summed into one bias before the attention."""

    terms: tuple


def with_term(bias, term):
    """The bias found so far and one more term."""
    if bias is None:
        return term
    return Summed((bias.terms if isinstance(bias, Summed) else (bias,)) + (term,))


def bias_tensor(graph, uses, bias, names, like) -> tuple:
    """(bias tensor or None, nodes to add) for what find_scores found: a tensor, a MaskedFill, or a
    Summed of those (added in order)."""
    if bias is None or isinstance(bias, str):
        return bias, []
    if isinstance(bias, MaskedFill):
        return bias.nodes(graph, uses, names, like)
    total, made = None, []
    for term in bias.terms:
        tensor, more = bias_tensor(graph, uses, term, names, like)
        made += more
        if total is not None:
            made.append(attention_heads.new_node(graph, names, "add", [total, tensor], {}, like))
            tensor = made[-1].output
        total = tensor
    return total, made


def probabilities(uses, softmax, bias, found):
    """What p @ v reads: the softmax's output, or the NaN guard PyTorch's ONNX export writes
    after a softmax with a boolean mask, where(p != p, 0, p). A NaN row needs scores of -inf
    all along it, which finite scores plus a mask of two finite constants (where(mask, 0,
    finfo.min)) do not give, so with such a bias the guard is dropped."""
    p = softmax.output
    readers = uses.of(p)
    if len(readers) == 1:
        return p
    isnan = next((n for n in readers if n.op == "not_equal" and n.inputs == [p, p]), None)
    guard = next((n for n in readers if n.op == "where"), None)
    if len(readers) != 3 or p in uses.outputs or isnan is None or guard is None or \
            guard.inputs != [isnan.output, guard.inputs[1], p] or \
            uses.only_reader(isnan.output) is not guard or constant(uses, guard.inputs[1]) != 0:
        return None
    mask = uses.made_by(bias, "where") if isinstance(bias, str) else None
    fills = [constant(uses, t) for t in mask.inputs[1:]] if mask is not None else [None]
    if None in fills or not np.isfinite(fills).all():
        return None
    zero = uses.made_by(guard.inputs[1])
    found += [isnan, guard] + ([zero] if uses.only_reader(zero.output) is guard else [])
    return guard.output


def pv_matmul(uses, probs):
    """The plain matmul p v that alone reads the probabilities `probs`, else None."""
    pv = uses.only_reader(probs) if probs is not None else None
    if pv is None or pv.op != "matmul" or pv.inputs[0] != probs or pv.attrs["transpose_b"] or \
            pv.attrs["alpha"] != 1.0 or pv.attrs["activation"] != "none" or len(pv.inputs) != 2:
        return None
    return pv


def attention_name(names: set, softmax: Node) -> str:
    parent = softmax.name.rpartition(".")[0]
    return free_name(names, (parent + "." if parent else "") + "attention")


def split_scores(graph, uses, softmax, found):
    """(3-d scores tensor, reader, outer mask or None, probabilities' reshape) when a softmax
    over [b, h, q, k] reads [b * h, q, k] scores reshaped, perhaps masked after the reshape
    (DeBERTa: where(mask, fill, scores); BLOOM: scores + mask), and p v reads the probabilities
    reshaped back."""
    t, reader, outer = softmax.inputs[0], softmax, None
    node = uses.made_by(t, "where", "add")
    if node is not None and uses.only_reader(t) is reader:
        if node.op == "add" and node.attrs.get("scalar") is None:  # BLOOM's mask
            a, b = node.inputs
            viewed = uses.made_by(a, "reshape") is not None
            outer, t = (b, a) if viewed else (a, b)
        elif node.op == "where" and masks(uses, node.inputs[1]):
            outer = MaskedFill(node.inputs[0], node.inputs[1], flipped=True)
            t = node.inputs[2]
        elif node.op == "where" and masks(uses, node.inputs[2]):
            outer = MaskedFill(node.inputs[0], node.inputs[2])
            t = node.inputs[1]
        if outer is not None:
            found.append(node)
            reader = node
    split = uses.made_by(t, "reshape")
    back = uses.only_reader(softmax.output)
    if split is None or uses.only_reader(t) is not reader or back is None or \
            back.op != "reshape":
        return None
    src, viewed = graph.tensors[split.inputs[0]].shape, graph.tensors[split.output].shape
    if len(src) != 3 or len(viewed) != 4:
        return None
    (n, q, k), (b, h, q4, k4) = src, viewed
    if (q, k) != (q4, k4) or n != b * h or tuple(graph.tensors[back.output].shape) != (n, q, k):
        return None
    found += [split, back]
    return split.inputs[0], split, outer, back.output



def forget(graph, nodes):
    """Drops the tensors of nodes made for a match that failed (never inserted)."""
    for extra in nodes:
        del graph.tensors[extra.output]
