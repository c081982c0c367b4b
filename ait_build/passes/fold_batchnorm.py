"""Batch-norm folding: an inference batch_norm right after a conv2d or linear is a per-channel
scale and shift of that op's output, so it folds into the op's weight and bias:

    w' = w * s,  b' = (b or 0) * s + beta - mean * s,  s = gamma / sqrt(var + eps)

So does a multiplication (or division) by a number (s the number, no shift): Whisper's, BART's
and Marian's queries are q_proj(x) * head_dim ** -0.5, and folded, q_proj reads like k_proj and
v_proj, so fuse_attention can pack the three into one GEMM.

The folded arrays are new weights (`<op>.folded_weight`, `<op>.folded_bias`); the spec's weights
and the safetensors file stay as they are. Only when the op's output feeds nothing but the
batch_norm, and the op applies no epilogue of its own yet (an activation or residual would sit
between the accumulator and the norm).
"""

from __future__ import annotations

import numpy as np

from ait_build.ir.graph import Graph
from ait_build.passes.rewrite import Uses, add_weight, remove_nodes, summary

FOLDS_INTO = ("conv2d", "linear")


def fold(graph: Graph, op, bn) -> None:
    w = graph.weights
    weight = w.get(op.weights["weight"])
    if bn.op == "batch_norm":
        scale = w.get(bn.weights["weight"]) / np.sqrt(w.get(bn.weights["running_var"])
                                                      + np.float32(bn.attrs["eps"]))
        shift = w.get(bn.weights["bias"]) - w.get(bn.weights["running_mean"]) * scale
    else:  # a mul or div by a number
        number = float(bn.attrs["scalar"])
        scale = np.full(weight.shape[0], number if bn.op == "mul" else 1.0 / number, np.float32)
        shift = 0.0
    folded_w = weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))  # out channels lead
    old_bias = w.get(op.weights["bias"]) if "bias" in op.weights else 0.0
    folded_b = old_bias * scale + shift
    like = graph.tensors[op.weights["weight"]]
    op.weights = {
        "weight": add_weight(graph, f"{op.name}.folded_weight", folded_w, like.dtype, like),
        "bias": add_weight(graph, f"{op.name}.folded_bias", folded_b, like.dtype, like),
    }
    op.attrs["bias"] = True
    op.outputs = list(bn.outputs)


def _number(node) -> bool:
    """A mul or div of a float tensor by a nonzero finite number."""
    value = node.attrs.get("scalar")
    return node.op in ("mul", "div") and isinstance(value, (int, float)) \
        and not isinstance(value, bool) and value != 0 and np.isfinite(value)


def run(graph: Graph, target) -> str:
    folded = []
    uses = Uses(graph)
    for bn in [n for n in graph.nodes if n.op == "batch_norm" or _number(n)]:
        op = uses.made_by(bn.inputs[0], *FOLDS_INTO)
        if op is None or uses.only_reader(op.output) is not bn:
            continue
        if op.attrs.get("activation", "none") != "none" or len(op.inputs) > 1:
            continue
        if op.attrs.get("weight_layout", "out_in") != "out_in":  # folding scales output rows
            continue
        fold(graph, op, bn)
        folded.append(bn)
    remove_nodes(graph, folded)
    norms = sum(n.op == "batch_norm" for n in folded)
    return summary((norms, "batch norms folded into conv/linear weights"),
                   (len(folded) - norms, "scalings by a number folded into conv/linear weights"))
