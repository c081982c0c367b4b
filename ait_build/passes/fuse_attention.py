"""Attention fusion, in two steps.

1. The written-out pattern (BERT's spec spells it so) becomes one `multi_head_attention` node:

       qh = permute(reshape(q, [b, s, h, d]), [0, 2, 1, 3])        (same for k and v)
       p  = softmax(matmul(qh, kh, transpose_b) * scale + bias, -1)
       out = reshape(permute(matmul(p, vh), [0, 2, 1, 3]), [b, s, h*d])

   The scale may come from `div`/`mul` by a scalar or the matmul's `alpha`, or from scalar
   factors on q and k (ONNX exports of scaled_dot_product_attention scale each by sqrt(scale);
   their NaN guard after a softmax with a finite boolean mask goes too); K may also arrive
   already transposed (a [0, 2, 3, 1] permute, or a [0, 1, 3, 2] one after the head split); the
   additive bias (an attention mask) is optional. Every intermediate must have no other reader,
   so the [b, h, s, s] score tensor is never written.
2. When q, k and v of an attention node are three `linear`s of the same tensor with the same
   shape and epilogue, they become one linear with concatenated weights (`<qkv>.packed_weight`)
   and the attention reads the packed result (`packed: true`): one GEMM instead of three.

Gated on the target's `fused_attention` capability.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim
from ait_build.ir.graph import Graph, Node
from ait_build.passes.rewrite import (Uses, add_weight, free_name, infer, new_value, node_names,
                                      permute_dims, position, remove_nodes, replace_uses, summary)
from ait_build.ops.opdef import TType
from ait_build.passes import attention_batched, attention_heads, score_layouts
from ait_build.passes.attention_masks import MASKED

def _scores(graph, uses, t, reader, scale, bias, found, head=None):
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
        rest = _scores(graph, uses, node.inputs[0], node, scale * factor, bias, found, head)
    elif node.op == "mul" and len(node.inputs) == 2:  # Swin V2's logit scale, per head
        rest = None
        for a, b in (node.inputs, node.inputs[::-1]):
            factor = score_layouts.head_factors(graph, uses, b, score_layouts.CANONICAL)
            if factor is not None:
                head = factor * (1 if head is None else head)
                rest = _scores(graph, uses, a, node, scale, bias, found, head)
                break
    elif node.op == "add" and scalar is None and plain:
        # softmax(x*s + bias) only: a bias added before the scale would be scaled too; more
        # than one term (MPNet: relative positions and the mask) are summed
        a, b = node.inputs
        rest = _scores(graph, uses, a, node, scale, _with(bias, b), found) or \
            _scores(graph, uses, b, node, scale, _with(bias, a), found)
    elif node.op == "where" and bias is None and plain and _masks(uses, node.inputs[2]):
        # masked_fill of the scores (older GPT-2 code) with a fill that masks: the same softmax
        # as adding where(mask, 0, fill), made once the whole pattern matched
        rest = _scores(graph, uses, node.inputs[1], node, scale, MaskedFill(*node.inputs[::2]), found)
    else:
        return None
    if rest is not None:
        found.append(node)
    return rest


def _constant(uses, t):
    """The value of a `constant` node making `t`, else None."""
    node = uses.made_by(t, "constant")
    return float(node.attrs["value"]) if node is not None else None


def _masks(uses, t) -> bool:
    """Whether `t` is a constant fill whose exponential is 0 beside any sane score."""
    value = _constant(uses, t)
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


def _with(bias, term):
    """The bias found so far and one more term."""
    if bias is None:
        return term
    return Summed((bias.terms if isinstance(bias, Summed) else (bias,)) + (term,))


def _bias_nodes(graph, uses, bias, names, like) -> tuple:
    """(bias tensor or None, nodes to add) for what _scores found: a tensor, a MaskedFill, or a
    Summed of those (added in order)."""
    if bias is None or isinstance(bias, str):
        return bias, []
    if isinstance(bias, MaskedFill):
        return bias.nodes(graph, uses, names, like)
    total, made = None, []
    for term in bias.terms:
        tensor, more = _bias_nodes(graph, uses, term, names, like)
        made += more
        if total is not None:
            made.append(attention_heads.new_node(graph, names, "add", [total, tensor], {}, like))
            tensor = made[-1].output
        total = tensor
    return total, made


def _probabilities(uses, softmax, bias, found):
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
            uses.only_reader(isnan.output) is not guard or _constant(uses, guard.inputs[1]) != 0:
        return None
    mask = uses.made_by(bias, "where") if isinstance(bias, str) else None
    fills = [_constant(uses, t) for t in mask.inputs[1:]] if mask is not None else [None]
    if None in fills or not np.isfinite(fills).all():
        return None
    zero = uses.made_by(guard.inputs[1])
    found += [isnan, guard] + ([zero] if uses.only_reader(zero.output) is guard else [])
    return guard.output


def _pv(uses, probs):
    """The plain matmul p v that alone reads the probabilities `probs`, else None."""
    pv = uses.only_reader(probs) if probs is not None else None
    if pv is None or pv.op != "matmul" or pv.inputs[0] != probs or pv.attrs["transpose_b"] or \
            pv.attrs["alpha"] != 1.0 or pv.attrs["activation"] != "none" or len(pv.inputs) != 2:
        return None
    return pv


def _attention_name(names: set, softmax: Node) -> str:
    parent = softmax.name.rpartition(".")[0]
    return free_name(names, (parent + "." if parent else "") + "attention")


def _split_scores(graph, uses, softmax, found):
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
        elif node.op == "where" and _masks(uses, node.inputs[1]):
            outer = MaskedFill(node.inputs[0], node.inputs[1], flipped=True)
            t = node.inputs[2]
        elif node.op == "where" and _masks(uses, node.inputs[2]):
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


def _match_batched(graph: Graph, uses: Uses, softmax: Node, names: set) -> tuple | None:
    """match() for [batch * heads, q, k] scores (attention_batched.py), the softmax taken over
    them or over their [b, h, q, k] view (_split_scores)."""
    found, outer, probs = [softmax], None, None
    if len(graph.tensors[softmax.output].shape) == 3:
        scores = _scores(graph, uses, softmax.inputs[0], softmax, 1.0, None, found) \
            if softmax.attrs["axis"] % 3 == 2 else None
    else:
        split = _split_scores(graph, uses, softmax, found) if softmax.attrs["axis"] % 4 == 3 \
            else None
        if split is None:
            return None
        t, reader, outer, probs = split
        scores = _scores(graph, uses, t, reader, 1.0, None, found)
    if scores is None or scores[3] is not None:
        return None
    mm, scale, bias, _ = scores
    head_dim = graph.tensors[mm.inputs[0]].shape[-1]
    if not head_dim.is_static:
        return None
    scales = []
    q = attention_batched.operand(graph, uses, mm.inputs[0], mm, head_dim.value, False, found,
                                  scales)
    k = attention_batched.operand(graph, uses, mm.inputs[1], mm, head_dim.value,
                                  not mm.attrs["transpose_b"], found, scales)
    pv = _pv(uses, probs or _probabilities(uses, softmax, bias, found))
    if q is None or k is None or pv is None:
        return None
    found.append(pv)
    v = attention_batched.operand(graph, uses, pv.inputs[1], pv, head_dim.value, False, found)
    out = attention_batched.output(graph, uses, pv, q) if v is not None else None
    if out is None or len({(t.batch, t.heads) for t in (q, k, v)}) != 1:
        return None
    chain, merge, steps = out
    found += chain  # the last: where the attention goes
    local, added, inputs = set(names), [], []
    qkv = attention_batched.packed(graph, uses, (q, k, v))
    if qkv is not None:  # one [.., 3, h*d] view of the in-projection, read packed
        tensor, added = attention_batched.input_nodes(graph, q, local, softmax, x=qkv[0])
        inputs, found = [tensor], qkv[1] + found
    for traced in (q, k, v) if qkv is None else ():
        tensor, made = attention_batched.input_nodes(graph, traced, local, softmax)
        inputs.append(tensor)
        added += made
    bias, more = _bias_nodes(graph, uses, bias, local, softmax)
    added += more
    made = attention_batched.bias_nodes(graph, bias, q.batch, q.heads, local, softmax) \
        if bias is not None else (None, [])
    if made is None:
        _forget(graph, added)
        return None
    bias, more = made
    added += more
    if outer is not None:  # the mask after the split, in [b, h or 1, q, k]
        bias, more = _bias_nodes(graph, uses, _with(bias, outer), local, softmax)
        added += more
    name = _attention_name(local, softmax)
    local.add(name)
    attrs = {"num_heads": q.heads, "head_dim": q.head_dim,
             "scale": float(scale * np.prod(scales)), "causal": False, "packed": qkv is not None}
    node = Node(name, "multi_head_attention", inputs + ([bias] if bias else []), [], attrs, {},
                softmax.loc)
    try:
        (ttype,) = infer(graph, node)
    except OpError:
        _forget(graph, added)
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


def match(graph: Graph, uses: Uses, softmax: Node, names: set) -> tuple | None:
    """(attention node, nodes it replaces, nodes to insert before it, nodes to insert after it)
    for the pattern ending at `softmax`, or None."""
    rank = len(graph.tensors[softmax.output].shape)
    if rank < 4:
        return _match_batched(graph, uses, softmax, names) if rank == 3 else None
    found = [softmax]
    scores = _scores(graph, uses, softmax.inputs[0], softmax, 1.0, None, found) \
        if softmax.attrs["axis"] % rank == rank - 1 else None
    layout = None
    if scores is None and rank == 4:  # scores in another layout on the way (score_layouts.py)
        layout = score_layouts.permuted_scores(graph, uses, softmax)
        if layout is None:  # or [b * h, q, k] scores seen as [b, h, q, k] (DeBERTa)
            return _match_batched(graph, uses, softmax, names)
        scores = (layout.matmul, layout.scale, None, layout.head_scale)
        found = list(layout.nodes)
    if scores is None:
        return None
    mm, scale, bias, head_scale = scores
    scales = []  # factors on q and k themselves
    q = attention_heads.split_heads(graph, uses, mm.inputs[0], rank, mm, found, scales)
    k = attention_heads.keys(graph, uses, mm, found, scales)
    pv = _pv(uses, layout.probs if layout else _probabilities(uses, softmax, bias, found))
    if q is None or k is None or pv is None:
        return None
    scale *= float(np.prod(scales))
    found.append(pv)
    v = attention_heads.split_heads(graph, uses, pv.inputs[1], rank, pv, found)
    back = uses.only_reader(pv.output)
    if v is None or back is None:
        return None
    if attention_heads.merged_view(graph, back):  # one head or one token: a reshape merges
        back, merge = None, back
    elif back.op not in ("permute", "transpose") or \
            permute_dims(graph, back) != attention_heads.heads_first(rank):
        return None
    else:
        merge = uses.only_reader(back.output)
    if merge is None or merge.op not in ("reshape", "flatten"):
        return None
    if len({(h, d) for _, h, d in (q, k, v)}) != 1:
        return None
    if head_scale is not None and np.all(head_scale == head_scale[0]):
        scale, head_scale = scale * float(head_scale[0]), None
    if head_scale is not None and (head_scale.size != q[1] or
                                   isinstance(q[0], attention_heads.PackedPart)):
        return None  # a factor per head goes onto q, which must be a tensor of its own
    local = set(names)  # names the nodes made before the match is known to take
    inputs = attention_heads.inputs(graph, q, k, v, found, local, softmax)
    if inputs is None:
        return None
    found += [n for n in (back, merge) if n is not None]  # the last: where the attention goes
    (qkv, packed, added), (_, heads, head_dim) = inputs, q
    name = _attention_name(local, softmax)
    period = 0
    if layout is not None:
        made = score_layouts.bias(graph, uses, local, layout.terms, softmax)
        if made is None:
            _forget(graph, added)
            return None
        bias, period, more = made
        added += more
    else:
        bias, more = _bias_nodes(graph, uses, bias, local, softmax)
        added += more
    if bias is not None and rank > 4:  # more batch axes: the bias must not vary along them
        made = attention_heads.flat_bias(graph, bias, local, softmax)
        if made is None:
            _forget(graph, added)
            return None
        bias, more = made
        added += more
    attrs = {"num_heads": heads, "head_dim": head_dim, "scale": float(scale), "causal": False,
             "packed": packed}
    if period:
        attrs["bias_period"] = period
    node = Node(name, "multi_head_attention", qkv + ([bias] if bias else []), [], attrs, {},
                softmax.loc)
    try:
        (out,) = infer(graph, node)
    except OpError:
        out = None  # e.g. a bias that does not broadcast to [b, h, s, s]
    want = graph.tensors[merge.output]
    after = []
    if out is not None and out.dtype == want.dtype and tuple(out.shape) != tuple(want.shape):
        # merged straight into another shape (Swin's windows): the attention's rows, reshaped
        node.outputs = [new_value(graph, name, out, softmax)]
        after = [Node(free_name(local | {name}, name + ".merge"), "reshape", list(node.outputs),
                      list(merge.outputs), {"shape": tuple(want.shape)}, {}, merge.loc)]
        added.append(node)  # (its output tensor goes too if the match fails)
    elif out is not None and out.dtype == want.dtype:
        node.outputs = list(merge.outputs)
    else:
        out = None
    if out is None:
        _forget(graph, added)
        return None
    if after:
        added.remove(node)
    if head_scale is not None:  # last: its weight stays in the store once made
        node.inputs[0], more = attention_heads.scaled_query(graph, qkv[0], head_scale, head_dim,
                                                            local, softmax)
        added += more
    names |= local
    return node, found, added, after


def _forget(graph, nodes):
    """Drops the tensors of nodes made for a match that failed (never inserted)."""
    for extra in nodes:
        del graph.tensors[extra.output]


def _same_projection(nodes) -> bool:
    first = nodes[0]
    return all(n.op == "linear" and len(n.inputs) == 1 and n.inputs == first.inputs
               and n.attrs == first.attrs for n in nodes) and len({id(n) for n in nodes}) == 3 \
        and first.attrs["activation"] == "none" \
        and first.attrs.get("weight_layout", "out_in") == "out_in"  # packed along output rows


def pack_qkv(graph: Graph, uses: Uses, attn: Node, names: set) -> list:
    """Merges attn's q/k/v projections into one linear; returns the nodes it replaces."""
    projections = [uses.made_by(t) for t in attn.inputs[:3]]
    if any(p is None for p in projections) or not _same_projection(projections):
        return []
    if any(uses.only_reader(p.output) is not attn for p in projections):
        return []
    prefix = _common_prefix([p.name for p in projections])
    name = free_name(names | set(graph.tensors), prefix + "qkv" if prefix else attn.name + ".qkv")
    names.add(name)
    first = projections[0]
    weights = {}
    for role in first.weights:
        parts = [graph.weights.get(p.weights[role]) for p in projections]
        like = graph.tensors[first.weights[role]]
        weights[role] = add_weight(graph, f"{name}.packed_{role}", np.concatenate(parts, axis=0),
                                   like.dtype, like)
    attrs = dict(first.attrs, out_features=3 * first.attrs["out_features"])
    packed = Node(name, "linear", list(first.inputs), [], attrs, weights, first.loc)
    (ttype,) = infer(graph, packed)
    packed.outputs = [new_value(graph, name, TType(ttype.shape, ttype.dtype), first)]
    graph.nodes.insert(min(position(graph, p) for p in projections), packed)
    attn.inputs = [packed.output] + attn.inputs[3:]
    attn.attrs["packed"] = True
    return projections


def packed_split(graph: Graph, uses: Uses, attn: Node, names: set) -> list:
    """When q, k and v are the three equal parts, in order, of a split along the last axis of one
    [b, s, 3*h*d] tensor (GPT-2's c_attn), attn reads that tensor packed; returns the split.
    Parts of a split with more batch axes ([b, windows, s, 3*h*d], MaxViT), each flattened for
    the attention, make it read a flattened view of the whole."""
    views = [uses.made_by(t, "reshape") for t in attn.inputs[:3]]
    if any(v is None or uses.only_reader(v.output) is not attn for v in views):
        views = []
    parts = [v.inputs[0] for v in views] if views else attn.inputs[:3]
    split = uses.made_by(parts[0], "split")
    if split is None or list(parts) != list(split.outputs) or len(split.outputs) != 3:
        return []
    if any(uses.only_reader(t) is not (views[i] if views else attn) for i, t in enumerate(parts)):
        return []
    src = graph.tensors[split.inputs[0]].shape
    width = attn.attrs["num_heads"] * attn.attrs["head_dim"]
    if len(src) < 3 or split.attrs["axis"] % len(src) != len(src) - 1 or (len(src) > 3) != \
            bool(views) or any(graph.tensors[t].shape[-1] != Dim.of(width) for t in parts):
        return []
    packed = split.inputs[0]
    if views:
        b, s, _ = graph.tensors[attn.inputs[0]].shape
        name = free_name(names | set(graph.tensors), attn.name + ".packed")
        names.add(name)
        view = Node(name, "reshape", [packed], [], {"shape": (b, s, Dim.of(3 * width))}, {},
                    attn.loc)
        (ttype,) = infer(graph, view)
        view.outputs = [new_value(graph, name, ttype, attn)]
        graph.nodes.insert(position(graph, attn), view)
        packed = view.output
    attn.inputs = [packed] + attn.inputs[3:]
    attn.attrs["packed"] = True
    return [split] + views


def _common_prefix(names: list) -> str:
    """The shared dotted prefix ('layer.0.attention.self.') of the three projection names."""
    parts = [n.split(".") for n in names]
    shared = []
    for group in zip(*parts):
        if len(set(group)) != 1:
            break
        shared.append(group[0])
    return ".".join(shared) + "." if shared and len(shared) < min(len(p) for p in parts) else ""


def _share(graph: Graph, made: set) -> None:
    """Nodes this pass made that compute the same as an earlier one (every layer of BLOOM sums
    the same ALiBi and mask into its bias) read that one's output instead, and go."""
    seen, dup = {}, []
    for node in graph.nodes:
        if node.name not in made or node.weights or len(node.outputs) != 1:
            continue
        key = (node.op, tuple(node.inputs), repr(sorted(node.attrs.items())))
        if key in seen:
            replace_uses(graph, node.output, seen[key])
            dup.append(node)
        else:
            seen[key] = node.output
    remove_nodes(graph, dup)


def run(graph: Graph, target) -> str:
    if not target.cap("fused_attention"):
        return ""
    names = node_names(graph)
    fused, made = 0, set()
    for softmax in [n for n in graph.nodes if n.op == "softmax"]:
        found = match(graph, Uses(graph), softmax, names)
        if found is None:
            continue
        node, replaced, before, after = found
        names.update(n.name for n in [node] + before + after)
        made.update(n.name for n in before)
        at = position(graph, replaced[-1])
        graph.nodes[at:at + 1] = before + [node] + after
        remove_nodes(graph, replaced[:-1])
        fused += 1
    _share(graph, made)
    # what was summed into a new bias (score_layouts.bias) is read no more (the graph had no
    # dead nodes before this pass: eliminate_dead_code runs first)
    while True:
        uses = Uses(graph)
        dead = [n for n in graph.nodes if not any(uses.of(t) or t in uses.outputs for t in n.outputs)]
        if not dead:
            break
        remove_nodes(graph, dead)
    packed = 0
    for attn in [n for n in graph.nodes if n.op == "multi_head_attention" and not n.attrs["packed"]]:
        uses = Uses(graph)
        replaced = packed_split(graph, uses, attn, names) or pack_qkv(graph, uses, attn, names)
        if replaced:
            remove_nodes(graph, replaced)
            packed += 1
    return summary((fused, "attention patterns fused"), (packed, "q/k/v projections packed"))
