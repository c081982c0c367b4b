"""Graph surgery shared by the passes: who reads a tensor, rewiring uses, adding computed weights,
adding and removing nodes. Passes keep the graph valid (`verify`) after each edit they finish."""

from __future__ import annotations

import numpy as np

from ait_build.ir.dims import Dim
from ait_build.ir.graph import VALUE, WEIGHT, Graph, Node, Tensor
from ait_build.ops.opdef import TType
from ait_build.ops.registry import get_op


class Uses:
    """Consumers and producers of every tensor, rebuilt cheaply after a pass edits the graph."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.readers: dict = {}
        self.producer: dict = {}
        for n in graph.nodes:
            for t in n.inputs:
                self.readers.setdefault(t, []).append(n)
            for t in n.outputs:
                self.producer[t] = n
        self.outputs = set(graph.outputs)

    def of(self, tensor: str) -> list:
        return self.readers.get(tensor, [])

    # kept up to date by a pass that edits as it goes, instead of rebuilt after each edit (which
    # made fusing every GEMM of a large graph quadratic: minutes at 20000 nodes)
    def forget(self, node: Node) -> None:
        """`node` leaves the graph: it reads and makes nothing any more."""
        for t in node.inputs:
            self.readers[t] = [n for n in self.readers.get(t, []) if n is not node]
        for t in node.outputs:
            if self.producer.get(t) is node:
                del self.producer[t]

    def set_outputs(self, node: Node, outputs) -> None:
        """`node` makes `outputs` instead of what it made."""
        for t in node.outputs:
            if self.producer.get(t) is node:
                del self.producer[t]
        node.outputs = list(outputs)
        for t in node.outputs:
            self.producer[t] = node

    def add_input(self, node: Node, tensor: str) -> None:
        node.inputs.append(tensor)
        self.readers.setdefault(tensor, []).append(node)

    def only_reader(self, tensor: str) -> Node | None:
        """The single node reading `tensor` once, when nothing else (not even the graph) needs it."""
        readers = self.of(tensor)
        if tensor in self.outputs or len(readers) != 1 or readers[0].inputs.count(tensor) != 1:
            return None
        return readers[0]

    def made_by(self, tensor: str, *ops: str) -> Node | None:
        node = self.producer.get(tensor)
        return node if node is not None and (not ops or node.op in ops) else None


def constant_fill(uses: Uses, tensor: str) -> float | None:
    """The value of the `constant` node making `tensor`, else None."""
    node = uses.made_by(tensor, "constant")
    return float(node.attrs["value"]) if node is not None else None


def replace_uses(graph: Graph, old: str, new: str) -> None:
    """Every read of tensor `old` (and the graph output, if it is one) now reads `new`."""
    for n in graph.nodes:
        if old in n.inputs:
            n.inputs = [new if t == old else t for t in n.inputs]
    graph.outputs = [new if t == old else t for t in graph.outputs]


def rename_tensor(graph: Graph, old: str, new: str) -> None:
    """Renames a tensor everywhere, including its producer's outputs (`new` must be free)."""
    tensor = graph.tensors.pop(old)
    tensor.name = new
    graph.tensors[new] = tensor
    for n in graph.nodes:
        n.outputs = [new if t == old else t for t in n.outputs]
    replace_uses(graph, old, new)


def remove_nodes(graph: Graph, dead) -> None:
    ids = {id(n) for n in dead}
    graph.nodes = [n for n in graph.nodes if id(n) not in ids]
    graph.remove_unused_tensors()


def free_name(names, base: str) -> str:
    """`base`, or `base_1`, `base_2`, ... whichever is not yet in `names`."""
    if base not in names:
        return base
    i = 1
    while f"{base}_{i}" in names:
        i += 1
    return f"{base}_{i}"


def node_names(graph: Graph) -> set:
    return {n.name for n in graph.nodes}


def add_weight(graph: Graph, name: str, value: np.ndarray, dtype: str, like: Tensor | None = None) -> str:
    """Registers a build-time computed weight; the spec's own weights are never overwritten."""
    name = free_name(set(graph.tensors) | set(graph.weights.specs), name)
    loc = like.loc if like is not None else graph.tensors[graph.inputs[0]].loc
    graph.tensors[name] = Tensor(name, tuple(Dim.of(int(s)) for s in value.shape), dtype, WEIGHT,
                                 loc, "computed")
    graph.weights.set(name, value)
    return name


def infer(graph: Graph, node: Node) -> list:
    """The op row's output types for `node` as it stands now."""
    op = get_op(node.op)
    ins = [TType(graph.tensors[t].shape, graph.tensors[t].dtype) for t in node.inputs]
    return op.infer_types(node.attrs, ins, graph.dtype)


def new_value(graph: Graph, name: str, ttype: TType, like: Node) -> str:
    name = free_name(graph.tensors, name)
    graph.tensors[name] = Tensor(name, tuple(ttype.shape), ttype.dtype, VALUE, like.loc)
    return name


def position(graph: Graph, node: Node) -> int:
    """Index of `node` in execution order (by identity: nodes are mutable dataclasses)."""
    return next(i for i, n in enumerate(graph.nodes) if n is node)


def insert_before(graph: Graph, anchor: Node, node: Node) -> None:
    graph.nodes.insert(position(graph, anchor), node)


def is_value(graph: Graph, tensor: str) -> bool:
    return graph.tensors[tensor].kind == VALUE


def vector_len(shape) -> int | None:
    """N when `shape` is [N] or [1, ..., 1, N] with N static: a per-channel vector."""
    if not shape or not all(d.is_static for d in shape) or any(d != 1 for d in shape[:-1]):
        return None
    return shape[-1].value


def run_node(graph: Graph, node: Node, inputs: list, env: dict | None = None) -> list:
    """One node's NumPy reference on concrete inputs (for folding at build time)."""
    env = env or {}
    shapes = [tuple(d.eval(env) for d in graph.tensors[t].shape) for t in node.outputs]
    ws = {role: graph.weights.get(w) for role, w in node.weights.items()}
    attrs = dict(node.attrs, _env=env, _out_shapes=shapes)
    return get_op(node.op).reference(attrs, inputs, ws)


def permute_dims(graph: Graph, node: Node) -> tuple:
    """The dims a `permute` or `transpose` node takes its output axes from, as a permutation."""
    rank = len(graph.tensors[node.inputs[0]].shape)
    if node.op == "permute":
        return tuple(d % rank for d in node.attrs["dims"])
    dims = list(range(rank))
    a, b = node.attrs["dim0"] % rank, node.attrs["dim1"] % rank
    dims[a], dims[b] = dims[b], dims[a]
    return tuple(dims)


def inverse_dims(dims) -> tuple:
    """The permutation that undoes `dims`."""
    out = [0] * len(dims)
    for i, d in enumerate(dims):
        out[d] = i
    return tuple(out)


def summary(*parts) -> str:
    """'a, b' from the non-empty (count, text) parts: ('2 identity ops', ...)."""
    return ", ".join(f"{count} {text}" for count, text in parts if count)
