"""Batch norms that did not fold into a conv/linear (DenseNet's, after a concat; any after a
pool or at an input) become a per-channel affine, `x * scale + shift` with

    scale = gamma / sqrt(var + eps),  shift = beta - mean * scale

computed now into two weights (`<bn>.affine_scale`, `<bn>.affine_shift`) read by `parameter`
nodes: a `mul` and an `add` of per-channel vectors, the ops the later passes already know. The
elementwise fusion then runs them with the activation after them (relu, relu6, silu, ...) as one
kernel, and the concat fusion runs a concat before them in that kernel too; a batch norm kept as
its own node would be a full pass over its tensor of its own.

Runs after fold_batchnorm, which takes every batch norm it can fold into weights.
"""

from __future__ import annotations

import numpy as np

from ait_build.ir.graph import Graph, Node
from ait_build.ops.opdef import TType
from ait_build.passes.fold_constants import parameter_node
from ait_build.passes.rewrite import add_weight, free_name, new_value, node_names, position, summary


def scale_and_shift(graph: Graph, bn: Node) -> tuple:
    """The batch norm as float32 (scale, shift), as its reference computes them."""
    w = graph.weights
    scale = w.get(bn.weights["weight"]) / np.sqrt(w.get(bn.weights["running_var"])
                                                  + np.float32(bn.attrs["eps"]))
    shift = w.get(bn.weights["bias"]) - w.get(bn.weights["running_mean"]) * scale
    return scale.astype(np.float32), shift.astype(np.float32)


def as_affine(graph: Graph, bn: Node, names: set) -> list:
    """The nodes replacing `bn`: two parameter reads, the mul and the add (keeping its output)."""
    x = graph.tensors[bn.inputs[0]]
    scale, shift = scale_and_shift(graph, bn)
    nodes, vectors = [], []
    for role, value in (("scale", scale), ("shift", shift)):
        weight = add_weight(graph, f"{bn.name}.affine_{role}", value, x.dtype, x)
        name = free_name(names, f"{bn.name}.{role}")
        names.add(name)
        out = new_value(graph, name, TType((x.shape[-1],), x.dtype), bn)
        nodes.append(parameter_node(name, out, weight, (x.shape[-1],), bn))
        vectors.append(out)
    scaled = new_value(graph, f"{bn.name}.scaled", TType(tuple(x.shape), x.dtype), bn)
    mul_name = free_name(names, f"{bn.name}.scaled")
    names.add(mul_name)
    nodes.append(Node(mul_name, "mul", [bn.inputs[0], vectors[0]], [scaled], {}, {}, bn.loc))
    nodes.append(Node(bn.name, "add", [scaled, vectors[1]], list(bn.outputs), {}, {}, bn.loc))
    return nodes


def run(graph: Graph, target) -> str:
    names = node_names(graph)
    count = 0
    for bn in [n for n in graph.nodes if n.op == "batch_norm"]:
        at = position(graph, bn)
        graph.nodes[at:at + 1] = as_affine(graph, bn, names)
        count += 1
    graph.remove_unused_tensors()
    return summary((count, "batch norms made per-channel affines"))
