"""Numbers `ait-build graph --format json` shows for a graph at any stage: unique kernels and the
planned workspace against the naive sum. Stages before plan_memory get the
workspace computed on the fly, so a user can see what each pass buys."""

from __future__ import annotations

from ait_build.ir.graph import Graph
from ait_build.passes.kernel_signatures import kernel_key, unique_kernels
from ait_build.passes.plan_memory import plan


def summarize(graph: Graph, target=None) -> dict:
    keys = [kernel_key(graph, n) for n in graph.nodes]
    memory = graph.memory_plan if graph.memory_plan is not None else plan(graph)
    return {
        "kernels": unique_kernels(graph, keys),
        "launches": sum(1 for k in keys if k),
        "workspace_bytes": memory.workspace_bytes,
        "naive_bytes": memory.naive_bytes,
        "peak_bytes": memory.peak_bytes,
    }
