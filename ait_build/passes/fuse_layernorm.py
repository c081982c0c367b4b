"""Residual add + layer_norm: LN(a + b) becomes layer_norm(a, residual=b) when the sum has no
other reader (post-LN transformers: BERT). The norm reads both rows in its single pass, so the sum
is never written to memory.

Runs before epilogue fusion on purpose: otherwise the GEMM in front would take the add as its
residual, and the GEMM that stays plain (bias only) is the one more layers share a kernel with.
Pre-LN models (ViT) keep the sum for the next residual, so their adds go to the GEMM epilogue.
Gated on the target's `fused_layernorm` capability.
"""

from __future__ import annotations

from ait_build.ir.graph import Graph
from ait_build.passes.rewrite import Uses, remove_nodes, summary


def run(graph: Graph, target) -> str:
    if not target.cap("fused_layernorm"):
        return ""
    uses = Uses(graph)
    fused = []
    for ln in [n for n in graph.nodes if n.op == "layer_norm" and len(n.inputs) == 1]:
        add = uses.made_by(ln.inputs[0], "add")
        if add is None or add.attrs.get("scalar") is not None or uses.only_reader(add.output) is not ln:
            continue
        shape = graph.tensors[add.output].shape
        if any(tuple(graph.tensors[t].shape) != tuple(shape) for t in add.inputs):
            continue  # the fused norm takes a full-size residual, not a broadcast one
        ln.inputs = list(add.inputs)
        fused.append(add)
    remove_nodes(graph, fused)
    return summary((len(fused), "residual adds fused into layer_norm"))
