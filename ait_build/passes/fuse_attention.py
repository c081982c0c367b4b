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

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim
from ait_build.ir.graph import Graph, Node
from ait_build.passes.rewrite import (Uses, add_weight, free_name, infer, new_value, node_names,
                                      permute_dims, position, remove_nodes, summary)
from ait_build.ops.opdef import TType
from ait_build.passes import attention_batched, attention_heads, merge_duplicates, score_layouts
from ait_build.passes.attention_scores import (attention_name, bias_tensor, find_scores, forget,
                                               probabilities, pv_matmul)

def match(graph: Graph, uses: Uses, softmax: Node, names: set) -> tuple | None:
    """(attention node, nodes it replaces, nodes to insert before it, nodes to insert after it)
    for the pattern ending at `softmax`, or None."""
    rank = len(graph.tensors[softmax.output].shape)
    if rank < 4:
        return attention_batched.match(graph, uses, softmax, names) if rank == 3 else None
    found = [softmax]
    scores = find_scores(graph, uses, softmax.inputs[0], softmax, 1.0, None, found) \
        if softmax.attrs["axis"] % rank == rank - 1 else None
    layout = None
    if scores is None and rank == 4:  # scores in another layout on the way (score_layouts.py)
        layout = score_layouts.permuted_scores(graph, uses, softmax)
        if layout is None:  # or [b * h, q, k] scores seen as [b, h, q, k] (DeBERTa)
            return attention_batched.match(graph, uses, softmax, names)
        scores = (layout.matmul, layout.scale, None, layout.head_scale)
        found = list(layout.nodes)
    if scores is None:
        return None
    mm, scale, bias, head_scale = scores
    scales = []  # factors on q and k themselves
    q = attention_heads.split_heads(graph, uses, mm.inputs[0], rank, mm, found, scales)
    k = attention_heads.keys(graph, uses, mm, found, scales)
    pv = pv_matmul(uses, layout.probs if layout else probabilities(uses, softmax, bias, found))
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
    name = attention_name(local, softmax)
    period = 0
    if layout is not None:
        made = score_layouts.bias(graph, uses, local, layout.terms, softmax)
        if made is None:
            forget(graph, added)
            return None
        bias, period, more = made
        added += more
    else:
        bias, more = bias_tensor(graph, uses, bias, local, softmax)
        added += more
    if bias is not None and rank > 4:  # more batch axes: the bias must not vary along them
        made = attention_heads.flat_bias(graph, bias, local, softmax)
        if made is None:
            forget(graph, added)
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
        forget(graph, added)
        return None
    if after:
        added.remove(node)
    if head_scale is not None:  # last: its weight stays in the store once made
        node.inputs[0], more = attention_heads.scaled_query(graph, qkv[0], head_scale, head_dim,
                                                            local, softmax)
        added += more
    names |= local
    return node, found, added, after


def _same_projection(nodes) -> bool:
    """Three linears of one input alike but for a bias (Whisper's k_proj has none: zeros)."""
    first = nodes[0]
    like = lambda n: {k: v for k, v in n.attrs.items() if k != "bias"}  # noqa: E731
    return all(n.op == "linear" and len(n.inputs) == 1 and n.inputs == first.inputs
               and like(n) == like(first) for n in nodes) and len({id(n) for n in nodes}) == 3 \
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
    for role in ("weight", "bias"):
        have = [p for p in projections if role in p.weights]
        if not have:
            continue
        like = graph.tensors[have[0].weights[role]]
        parts = [graph.weights.get(p.weights[role]) if role in p.weights
                 else np.zeros(p.attrs["out_features"], np.float32) for p in projections]
        weights[role] = add_weight(graph, f"{name}.packed_{role}", np.concatenate(parts, axis=0),
                                   like.dtype, like)
    attrs = dict(first.attrs, out_features=3 * first.attrs["out_features"],
                 bias="bias" in weights)
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


def run(graph: Graph, target) -> str:
    if not target.cap("fused_attention"):
        return ""
    names = node_names(graph)
    fused, made, uses = 0, set(), None
    for softmax in [n for n in graph.nodes if n.op == "softmax"]:
        # a failed match leaves the graph's nodes as they were: one Uses serves until a match
        # (rebuilding it for every softmax made a large graph quadratic)
        uses = uses or Uses(graph)
        found = match(graph, uses, softmax, names)
        if found is None:
            continue
        uses = None
        node, replaced, before, after = found
        names.update(n.name for n in [node] + before + after)
        made.update(n.name for n in before)
        at = position(graph, replaced[-1])
        graph.nodes[at:at + 1] = before + [node] + after
        remove_nodes(graph, replaced[:-1])
        fused += 1
    # nodes this pass made that compute what an earlier one of them did (every layer of BLOOM
    # sums the same ALiBi and mask into its bias): their readers read that one
    merge_duplicates.merge(graph, among=made)
    # what was summed into a new bias (score_layouts.bias) is read no more (the graph had no
    # dead nodes before this pass: eliminate_dead_code runs first)
    while True:
        uses = Uses(graph)
        dead = [n for n in graph.nodes if not any(uses.of(t) or t in uses.outputs for t in n.outputs)]
        if not dead:
            break
        remove_nodes(graph, dead)
    packed, uses = 0, None
    for attn in [n for n in graph.nodes if n.op == "multi_head_attention" and not n.attrs["packed"]]:
        uses = uses or Uses(graph)
        replaced = packed_split(graph, uses, attn, names) or pack_qkv(graph, uses, attn, names)
        if replaced:
            remove_nodes(graph, replaced)
            packed, uses = packed + 1, None
    return summary((fused, "attention patterns fused"), (packed, "q/k/v projections packed"))
