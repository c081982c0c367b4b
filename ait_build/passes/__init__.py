"""THE pass pipeline: one visible, ordered list. Each pass lives in its own file, takes a Graph and
a Target, edits the graph in place and returns a one-line summary of what it changed ('' when
nothing). `optimize` runs them on a copy and keeps the summaries for `ait-build graph`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ait_build.ir.graph import Graph, verify


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable  # (graph, target) -> str
    doc: str = ""


PIPELINE: list = []


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
