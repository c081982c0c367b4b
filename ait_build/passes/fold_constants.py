"""Constant folding: a node whose data inputs are all known at build time (outputs of `parameter`
nodes, or of nodes folded before it) is computed now, with its NumPy reference, into a new weight
`<node>.folded_weight`, read by a `parameter` node that keeps the folded node's name and output.

Data-flow weights always enter the graph through `parameter` nodes, so the reference executor and
the backends see one form; where a weight is more useful as a role of the consuming op (a bias
vector added to a GEMM), the epilogue fusion pass turns the read into that role.

Not folded: graph outputs, symbolic shapes (they depend on the batch), non-model dtypes, and
nodes whose result is much larger than their inputs (an `expand` would only bloat the weights),
except lookups (`gather`, `embedding`), whose result the run would compute anyway, and nodes
whose inputs hold more than INPUT_LIMIT elements (computing them would take gigabytes of memory
at build time, and give weights as large again). A weight is loaded only when a node that reads
it is folded.
"""

from __future__ import annotations

from ait_build.ir.dims import numel
from ait_build.ir.graph import Graph, Node
from ait_build.passes.rewrite import (add_weight, free_name, node_names, position, run_node,
                                     summary)

GROWTH_LIMIT = 2  # a folded result may hold this many times its inputs' elements (+ SMALL)
SMALL = 4096
# lookups in a weight table by constant indices fold whatever their growth (Swin's relative
# position bias: a 169-row table read at 49 x 49 positions per head; T5's, an embedding of 32
# buckets read at 128 x 128 query-key distances)
LOOKUPS = ("gather", "embedding")
INPUT_LIMIT = 1 << 28


def _foldable(graph: Graph, node: Node, known: dict) -> bool:
    if node.op == "parameter" or not node.inputs or not all(t in known for t in node.inputs):
        return False
    outs = [graph.tensors[t] for t in node.outputs]
    if any(t.name in graph.outputs or t.dtype != graph.dtype for t in outs):
        return False
    if not all(d.is_static for t in outs for d in t.shape):
        return False
    size_in = sum(numel(graph.tensors[t].shape).value for t in node.inputs)
    if size_in > INPUT_LIMIT:
        return False
    if node.op in LOOKUPS:  # its result is what the run would compute each call
        return True
    size_out = sum(numel(t.shape).value for t in outs)
    return size_out <= GROWTH_LIMIT * size_in + SMALL


def parameter_node(name: str, output: str, weight: str, shape: tuple, like: Node) -> Node:
    return Node(name, "parameter", [], [output], {"shape": tuple(shape), "init": "normal"},
                {"value": weight}, like.loc)


def run(graph: Graph, target) -> str:
    known: dict = {}  # tensor -> its build-time value
    folded = 0
    names = node_names(graph)
    for node in list(graph.nodes):
        if node.op == "parameter":
            known[node.output] = node.weights["value"]  # the weight's name: loaded when read
            continue
        if not _foldable(graph, node, known):
            continue
        values = run_node(graph, node, [graph.weights.get(known[t]) if isinstance(known[t], str)
                                        else known[t] for t in node.inputs])
        replacement = []
        for t, value in zip(node.outputs, values):
            tensor = graph.tensors[t]
            wname = add_weight(graph, f"{node.name}.folded_weight", value, tensor.dtype, tensor)
            name = node.name if not replacement else free_name(names, f"{node.name}.folded")
            names.add(name)
            replacement.append(parameter_node(name, t, wname, tensor.shape, node))
            known[t] = value
        at = position(graph, node)
        graph.nodes[at:at + 1] = replacement
        folded += 1
    graph.remove_unused_tensors()
    return summary((folded, "nodes folded into weights"))
