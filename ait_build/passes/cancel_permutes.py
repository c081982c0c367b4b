"""A permute that keeps the last axis, a linear, and the inverse permute -> the linear alone.

A linear works on each row of the last axis, so it gives the same rows in either layout:
`permute(linear(permute(x, p)), p^-1)` is `linear(x)`. torch.nn.MultiheadAttention computes in
a sequence-first layout ([s, b, e]) whatever its caller's: with batch_first=True its output goes
through its out_proj between two such permutes, two copies of the activations for nothing, and
the permute between the out_proj and the residual add keeps the add out of the GEMM's epilogue.
Runs after fuse_attention (whose output reshapes and permutes this meets) and before
fuse_epilogue. Every intermediate must have no other reader.
"""

from __future__ import annotations

from ait_build.ir.graph import Graph
from ait_build.passes.rewrite import Uses, inverse_dims, permute_dims, remove_nodes, summary

ROW_WISE = ("linear",)


def run(graph: Graph, target) -> str:
    cancelled = 0
    uses = Uses(graph)
    for node in [n for n in graph.nodes if n.op in ROW_WISE]:
        before = uses.made_by(node.inputs[0], "permute", "transpose")
        after = uses.only_reader(node.output)
        if before is None or after is None or after.op not in ("permute", "transpose") or \
                len(node.inputs) != 1 or uses.only_reader(before.output) is not node:
            continue
        dims = permute_dims(graph, before)
        if dims[-1] != len(dims) - 1 or permute_dims(graph, after) != inverse_dims(dims):
            continue
        old = node.output
        node.inputs = [before.inputs[0]]
        node.outputs = list(after.outputs)
        del graph.tensors[old]
        remove_nodes(graph, [before, after])
        uses = Uses(graph)
        cancelled += 1
    return summary((cancelled, "permute pairs around a linear cancelled"))
