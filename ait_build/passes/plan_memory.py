"""Memory planning: every intermediate tensor gets a byte offset in ONE workspace, sized for the
largest dims (Graph.dims max), so a model allocates once and any batch size fits.

Which tensors: values computed by nodes, except graph outputs (they go to the caller's buffers),
`parameter` outputs (views of weights) and reshape/flatten outputs: tensors are contiguous, so
those are views that own no bytes (`aliases` maps each to the tensor it reads). Lifetimes run from
the producing node to the last reader, in execution order; reading a view reads what it views, and
a view that is a graph output keeps what it views alive to the end.

In place, before placing: an elementwise op (fused ones too), a row op (batch_norm, layer_norm,
softmax) or a GEMM/conv with a residual writes over an input (the residual, for GEMMs) of the same
shape that no later node reads: its kernel reads element i before it writes element i. Tensors
sharing bytes form one group with the union of their lifetimes.

Placement is greedy by size (largest group first, each into the tightest gap among the groups it
overlaps in time, else on top), the offset rule of Pisarchyk & Lee (2020) that AITemplate also
uses. The result is `graph.memory_plan`, a frozen MemoryPlan; the summary compares the workspace
with the naive sum (one buffer per tensor) and the live peak (a lower bound for any placement).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ait_build.ir.dims import numel
from ait_build.ir.dtypes import ITEMSIZE
from ait_build.ir.graph import VALUE, Graph
from ait_build.ops.registry import get_op
from ait_build.passes.fuse_epilogue import DATA_INPUTS
from ait_build.ir.placement import place_groups

VIEW_OPS = ("reshape", "flatten")
# each output row depends on its input row only
ROW_OPS = ("batch_norm", "layer_norm", "rms_norm", "softmax")
ALIGNMENT = 64


@dataclass(frozen=True)
class MemoryPlan:
    offsets: dict  # tensor -> byte offset in the workspace
    sizes: dict  # tensor -> bytes at the largest dims, rounded up to `alignment`
    workspace_bytes: int
    naive_bytes: int  # one buffer per tensor
    alignment: int = ALIGNMENT
    aliases: dict = field(default_factory=dict)  # view or in-place output -> tensor it reuses
    peak_bytes: int = 0  # most bytes live at one node: no placement can do better

    def home(self, tensor: str) -> str | None:
        """The planned tensor whose bytes hold `tensor` (itself, or what a view reads), if any."""
        while tensor not in self.offsets and tensor in self.aliases:
            tensor = self.aliases[tensor]
        return tensor if tensor in self.offsets else None


def planned_tensors(graph: Graph) -> list:
    outputs = set(graph.outputs)
    return [t for n in graph.nodes if n.op != "parameter" and n.op not in VIEW_OPS
            for t in n.outputs if graph.tensors[t].kind == VALUE and t not in outputs]


def tensor_bytes(graph: Graph, name: str, env: dict, alignment: int) -> int:
    t = graph.tensors[name]
    raw = numel(t.shape).eval(env) * ITEMSIZE[t.dtype]
    return -(-raw // alignment) * alignment


class _Groups:
    """Union-find over tensors that share bytes, tracking each group's lifetime."""

    def __init__(self, start: dict, end: dict):
        self.parent = {t: t for t in start}
        self.start, self.end = dict(start), dict(end)

    def find(self, t: str) -> str:
        while self.parent[t] != t:
            self.parent[t] = self.parent[self.parent[t]]
            t = self.parent[t]
        return t

    def join(self, t: str, into: str) -> None:
        a, b = self.find(t), self.find(into)
        self.parent[a] = b
        self.start[b] = min(self.start[a], self.start[b])
        self.end[b] = max(self.end[a], self.end[b])


def overwritable(node) -> list:
    """Inputs the node's kernel may write its output over: it reads element i (or the whole row)
    of them before writing element i. Every backend's kernels for these ops must allow it."""
    if get_op(node.op).elementwise or node.op in ROW_OPS:
        return list(node.inputs)
    return list(node.inputs[DATA_INPUTS[node.op]:]) if node.op in DATA_INPUTS else []  # residual


def _share(graph: Graph, groups: _Groups, sizes: dict, root) -> dict:
    """In-place reuse: output -> the planned tensor it overwrites."""
    aliases = {}
    for i, node in enumerate(graph.nodes):
        out = node.outputs[0]
        if len(node.outputs) != 1 or out not in sizes:
            continue
        shape = tuple(graph.tensors[out].shape)
        # a GEMM/conv reads its data inputs across many output elements: a residual that is
        # also one of them (x + conv(x), ResNet-style blocks over a depthwise conv) is not
        # overwritable, or later windows would read outputs already written over it
        data = {root(x) for x in node.inputs[:DATA_INPUTS[node.op]]} \
            if node.op in DATA_INPUTS else set()
        for t in overwritable(node):
            base = root(t)  # through views: a reshape keeps the element order
            if base in data:
                continue
            if base in sizes and sizes[base] == sizes[out] and \
                    tuple(graph.tensors[t].shape) == shape and groups.end[groups.find(base)] == i:
                groups.join(out, base)
                aliases[out] = base
                break
    return aliases


def plan(graph: Graph, env: dict | None = None, alignment: int = ALIGNMENT) -> MemoryPlan:
    """The plan at dim values `env` (default: every dim at its max)."""
    env = env or graph.bounds_env("max")
    names = planned_tensors(graph)
    sizes = {t: tensor_bytes(graph, t, env, alignment) for t in names}
    views = {n.output: n.inputs[0] for n in graph.nodes if n.op in VIEW_OPS}

    def root(t: str) -> str:
        while t in views:
            t = views[t]
        return t

    start, end = {}, {}
    for i, node in enumerate(graph.nodes):
        for t in node.outputs:
            if t in sizes:
                start[t] = end[t] = i
        for t in node.inputs:
            if root(t) in sizes:
                end[root(t)] = i
    for t in graph.outputs:  # a view returned as an output is copied out at the end
        if root(t) in sizes:
            end[root(t)] = len(graph.nodes) - 1
    groups = _Groups(start, end)
    aliases = {**views, **_share(graph, groups, sizes, root)}
    group_size: dict = {}
    for t in names:
        g = groups.find(t)
        group_size[g] = max(group_size.get(g, 0), sizes[t])
    roots = sorted(group_size, key=lambda g: (-group_size[g], groups.start[g], g))
    offsets, workspace = place_groups(roots, group_size, groups.start, groups.end)
    live = [0] * (len(graph.nodes) + 1)
    for g in roots:
        for i in range(groups.start[g], groups.end[g] + 1):
            live[i] += group_size[g]
    return MemoryPlan(offsets={t: offsets[groups.find(t)] for t in names}, sizes=sizes,
                      workspace_bytes=workspace, naive_bytes=sum(sizes.values()),
                      alignment=alignment, aliases=aliases, peak_bytes=max(live))


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


def run(graph: Graph, target) -> str:
    graph.memory_plan = plan(graph)
    p = graph.memory_plan
    in_place = sum(1 for t in p.aliases if t in p.offsets)
    return (f"workspace {mib(p.workspace_bytes)} for {len(p.sizes)} tensors (naive sum "
            f"{mib(p.naive_bytes)}, live peak {mib(p.peak_bytes)}; {in_place} written in place, "
            f"{len(p.aliases) - in_place} views)")
