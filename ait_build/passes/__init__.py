"""THE pass pipeline: one visible, ordered list. Each pass lives in its own file, takes a Graph and
a Target, edits the graph in place and returns a one-line summary of what it changed ('' when
nothing). `optimize` runs them on a copy and keeps the summaries for `ait-build graph`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ait_build.ir.graph import Graph, verify
from ait_build.passes import (attention_masks, batchnorm_to_affine, cancel_permutes,
                              eliminate_dead_code, fold_batchnorm, fold_constants, fuse_attention,
                              fuse_concat, fuse_data_movement, fuse_elementwise, fuse_epilogue,
                              fuse_layernorm, fuse_rmsnorm, fuse_rotary, merge_duplicates,
                              pad_channels, pad_heads, pad_out_channels, plan_memory,
                              recognize_activations)


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable  # (graph, target) -> str
    doc: str = ""


def _pipeline() -> list:
    steps = (  # (module, what it does); a pass is named after its module
        (eliminate_dead_code, "drop no-op nodes and nodes that reach no output"),
        (fold_constants, "compute weight-only subgraphs at build time"),
        (merge_duplicates, "a node computing what an earlier one did -> its readers read that one"),
        (fold_batchnorm, "fold batch_norm, a mul/div by a number, into the conv2d/linear before"),
        (batchnorm_to_affine, "other batch_norms -> x * scale + shift (fuses with an activation)"),
        (recognize_activations, "written-out GELU, SiLU, ... -> the activation op (fuses later)"),
        (fuse_rmsnorm, "written-out RMS and L2 norms (T5, LLaMA, Swin V2) -> rms_norm"),
        (pad_channels, "pad conv/linear input channels to the target's alignment"),
        (fuse_attention, "softmax(q k^T) v pattern -> multi_head_attention; q/k/v -> one GEMM"),
        (attention_masks, "attention masks: causal part -> causal mode, always-true parts dropped"),
        (cancel_permutes, "permute, linear, inverse permute -> the linear (nn.MultiheadAttention)"),
        (fuse_layernorm, "residual add + layer_norm -> layer_norm with a residual input"),
        (fuse_epilogue, "bias add, residual add, activation -> the GEMM/conv epilogue"),
        (pad_out_channels, "pad 16-bit conv/linear outputs to the target's alignment, slice after"),
        (pad_heads, "attention heads of unaligned width -> zero features in their projections"),
        (fuse_rotary, "x * cos + rotate_half(x) * sin -> rotary_embedding (LLaMA's q and k)"),
        (fuse_elementwise, "chains and small DAGs of elementwise ops -> one fused_elementwise"),
        (fuse_concat, "concat along channels read only by a per-channel program -> one kernel"),
        (fuse_data_movement, "chains of reshape/permute/slice/split/pad -> one strided copy"),
        (plan_memory, "tensor lifetimes -> offsets in one workspace"),
    )
    return [Pass(module.__name__.rpartition(".")[2], module.run, doc) for module, doc in steps]


# The order matters: folding first gives the fusions clean conv+bias ops; attention fusion runs
# before the epilogue and elementwise fusions, which would otherwise take its scale and mask adds;
# layernorm fusion before epilogue fusion (see fuse_layernorm.py); output padding after it (the
# bias and activation move into the padded node first); data-movement fusion after every pass
# that matches reshapes and permutes (attention's heads) or adds pads and slices (pad_channels,
# pad_out_channels);
# planning last, on the final graph.
PIPELINE: list = _pipeline()


def pass_names() -> list:
    return [p.name for p in PIPELINE]


def optimize(graph: Graph, target, stop_after: str | None = None, check: bool = True):
    """(optimized copy, [(pass name, summary)]). `stop_after` ends the pipeline after that pass."""
    if stop_after is not None and stop_after not in pass_names() + ["none"]:
        raise ValueError(stop_after)
    graph = graph.copy()
    report = []
    if stop_after == "none":
        return graph, report
    for p in PIPELINE:
        summary = p.run(graph, target) or ""
        if check:
            verify(graph)
        report.append((p.name, summary))
        if p.name == stop_after:
            break
    return graph, report
