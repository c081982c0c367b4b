"""The op graph: tensors, nodes in execution order, named dims with ranges, and weights."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ait_build.errors import Location, SpecError
from ait_build.ir.dims import Dim, DimRange, shape_str

INPUT, WEIGHT, VALUE = "input", "weight", "value"


@dataclass
class Tensor:
    name: str
    shape: tuple  # of Dim
    dtype: str
    kind: str = VALUE  # input | weight | value
    loc: Location = field(default_factory=lambda: Location("<graph>"))
    init: str = ""  # weights: how random init fills it (see weights.py)

    def __str__(self):
        return f"{self.name}: {self.dtype}{shape_str(self.shape)}"


@dataclass
class Node:
    name: str
    op: str
    inputs: list  # data tensor names
    outputs: list  # tensor names
    attrs: dict = field(default_factory=dict)
    weights: dict = field(default_factory=dict)  # role -> weight tensor name
    loc: Location = field(default_factory=lambda: Location("<graph>"))

    @property
    def output(self) -> str:
        return self.outputs[0]


@dataclass
class Graph:
    name: str
    dtype: str
    dims: dict  # name -> DimRange
    tensors: dict  # name -> Tensor
    nodes: list  # Node, in execution order
    inputs: list  # tensor names
    outputs: list  # tensor names
    weights: object = None  # ait_build.ir.weights.WeightStore
    source: str = ""
    memory_plan: object = None  # set by the memory planning pass (passes/plan_memory.py)

    # -- lookups -------------------------------------------------------------------------------
    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def producers(self) -> dict:
        return {t: n for n in self.nodes for t in n.outputs}

    def consumers(self) -> dict:
        users: dict = {name: [] for name in self.tensors}
        for n in self.nodes:
            for t in list(n.inputs) + list(n.weights.values()):
                users.setdefault(t, []).append(n)
        return users

    def weight_names(self) -> list:
        return sorted(t.name for t in self.tensors.values() if t.kind == WEIGHT)

    def op_counts(self) -> dict:
        counts: dict = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return dict(sorted(counts.items()))

    def copy(self) -> "Graph":
        """A copy whose nodes and tensors can be edited; the weight store is shared copy-on-write."""
        clone = copy.copy(self)
        clone.tensors = {k: copy.copy(v) for k, v in self.tensors.items()}
        clone.nodes = [copy.deepcopy(n) for n in self.nodes]
        clone.inputs, clone.outputs, clone.dims = list(self.inputs), list(self.outputs), dict(self.dims)
        clone.weights = self.weights.fork() if self.weights is not None else None
        return clone

    def remove_unused_tensors(self) -> None:
        used = set(self.inputs) | set(self.outputs)
        for n in self.nodes:
            used.update(n.inputs, n.outputs, n.weights.values())
        self.tensors = {k: v for k, v in self.tensors.items() if k in used}

    def bounds_env(self, which: str) -> dict:
        return {name: getattr(r, which) for name, r in self.dims.items()}


def verify(graph: Graph) -> None:
    """Check structural invariants: every tensor defined once before use, outputs exist, no cycles."""
    defined = set(graph.inputs) | {t.name for t in graph.tensors.values() if t.kind == WEIGHT}
    for name in graph.inputs:
        if name not in graph.tensors or graph.tensors[name].kind != INPUT:
            raise SpecError(f"graph input '{name}' is not an input tensor")
    seen_nodes = set()
    for n in graph.nodes:
        if n.name in seen_nodes:
            raise SpecError(f"two nodes are named '{n.name}'", n.loc)
        seen_nodes.add(n.name)
        for t in list(n.inputs) + list(n.weights.values()):
            if t not in defined:
                raise SpecError(f"node '{n.name}' reads '{t}' before it is defined", n.loc)
            if t not in graph.tensors:
                raise SpecError(f"node '{n.name}' reads unknown tensor '{t}'", n.loc)
        for t in n.outputs:
            if t in defined:
                raise SpecError(f"tensor '{t}' is written twice (by node '{n.name}')", n.loc)
            if t not in graph.tensors:
                raise SpecError(f"node '{n.name}' writes unknown tensor '{t}'", n.loc)
            defined.add(t)
    for t in graph.outputs:
        if t not in defined:
            raise SpecError(f"graph output '{t}' is never computed")
    for t in graph.tensors.values():
        for d in t.shape:
            if not isinstance(d, Dim):
                raise SpecError(f"tensor '{t.name}' has a non-Dim shape entry {d!r}")
            for sym in d.symbols:
                if sym not in graph.dims:
                    raise SpecError(f"tensor '{t.name}' uses undeclared dim '{sym}'")
    for name, r in graph.dims.items():
        if not isinstance(r, DimRange):
            raise SpecError(f"dim '{name}' has no range")
