"""Attention heads the tensor-core attention kernels cannot read: widen them with zeros.

The fused attention kernels read each head of a packed q/k/v tensor as 16-byte vectors, so a
head_dim that is not a multiple of the target's `channel_alignment` (MobileViT's 36 and 60, 4
heads of 144 and 240 features) sends the call to the GPU layer's attention on CUDA cores, many
times slower at a large batch. Where a linear writes the packed q/k/v for that attention alone
and a linear alone reads its output (the projections fuse_attention packs, and the output
projection), this pass gives every head zero features up to the next multiple: zero rows in the
q/k/v projection's weights and bias, head by head, and zero columns in the output projection's
weights. q.k is the same with the zeros, the padded features of each head's output are zeros,
and the output projection multiplies them by zeros, so the result is exact; the scale stays the
original head_dim's. The GEMMs grow by the padding (36 -> 40: 11%) and nothing is copied.
With alignment 1 (cpu, rocm) the pass changes nothing.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import HALF_DTYPES
from ait_build.ir.graph import Graph, Node
from ait_build.passes.rewrite import add_weight, summary


def _only_reader(readers: dict, graph: Graph, tensor: str) -> Node | None:
    found = readers.get(tensor, [])
    return found[0] if len(found) == 1 and tensor not in graph.outputs else None


def _projections(graph: Graph, readers: dict, made: dict, attn: Node, align: int):
    """(q/k/v linear, output linear) of a packed attention whose heads to widen, else None."""
    d = attn.attrs["head_dim"]
    if not attn.attrs.get("packed") or d % align == 0 or attn.attrs.get("bias_period"):
        return None
    qkv, out = made.get(attn.inputs[0]), _only_reader(readers, graph, attn.output)
    if graph.tensors[attn.output].dtype not in HALF_DTYPES or qkv is None or out is None:
        return None
    if (qkv.op != "linear" or out.op != "linear" or out.inputs[0] != attn.output
            or _only_reader(readers, graph, qkv.output) is not attn
            or qkv.attrs["out_features"] != 3 * attn.attrs["num_heads"] * d
            or qkv.attrs.get("activation", "none") != "none"):
        return None
    return qkv, out


def _widen(graph: Graph, node: Node, role: str, axis: int, heads: tuple, d: int, extra: int):
    """`node`'s weight `role` with each head's `d` features along `axis` followed by `extra`
    zeros (`heads`: the head counts the axis splits into before the features)."""
    name = node.weights[role]
    value = graph.weights.get(name)
    shape = value.shape[:axis] + heads + (d,) + value.shape[axis + 1:]
    widths = [(0, 0)] * len(shape)
    widths[axis + len(heads)] = (0, extra)
    wide = np.pad(value.reshape(shape), widths)
    wide = wide.reshape(value.shape[:axis] + (-1,) + value.shape[axis + 1:])
    tensor = graph.tensors[name]
    node.weights[role] = add_weight(graph, f"{node.name}.head_padded_{role}", wide, tensor.dtype,
                                    tensor)


def _retype(graph: Graph, tensor: str, width: int) -> None:
    t = graph.tensors[tensor]
    graph.tensors[tensor] = dataclasses.replace(t, shape=tuple(t.shape[:-1]) + (Dim.of(width),))


def run(graph: Graph, target) -> str:
    align = target.cap("channel_alignment")
    if align <= 1 or not target.cap("fused_attention"):
        return ""
    readers = graph.consumers()
    made = {t: n for n in graph.nodes for t in n.outputs}
    widened = 0
    for attn in [n for n in graph.nodes if n.op == "multi_head_attention"]:
        found = _projections(graph, readers, made, attn, align)
        if found is None:
            continue
        qkv, out = found
        h, d = attn.attrs["num_heads"], attn.attrs["head_dim"]
        extra = -d % align
        in_out = qkv.attrs.get("weight_layout") == "in_out"
        _widen(graph, qkv, "weight", 1 if in_out else 0, (3, h), d, extra)
        if "bias" in qkv.weights:
            _widen(graph, qkv, "bias", 0, (3, h), d, extra)
        _widen(graph, out, "weight", 0 if out.attrs.get("weight_layout") == "in_out" else 1,
               (h,), d, extra)
        qkv.attrs["out_features"] = 3 * h * (d + extra)
        if attn.attrs.get("scale") is None:  # the default follows head_dim: keep the original
            attn.attrs["scale"] = 1.0 / math.sqrt(d)
        attn.attrs["head_dim"] = d + extra
        _retype(graph, qkv.output, 3 * h * (d + extra))
        _retype(graph, attn.output, h * (d + extra))
        widened += 1
    if widened:
        graph.remove_unused_tensors()
    return summary((widened, f"attentions' heads padded to a multiple of {align} features"))
