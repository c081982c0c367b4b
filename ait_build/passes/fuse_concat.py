"""Concat fusion: a concat along the last dim whose only reader is an elementwise program over
per-channel vectors (DenseNet's concat -> batch norm -> relu, after batchnorm_to_affine and
fuse_elementwise made the norm and the relu one fused_elementwise) becomes one
`concat_elementwise` node (ops/fused.py): each piece is read once and written once, already
normalized, into its channels of the output, instead of a copy into the concat and a second
pass over all of it.

Only where that is the same computation: the concat's result is not needed elsewhere (no other
reader, not a graph output), the program's output has the concat's shape, and every other input
of the program is the same for every pixel (a vector of the channels or of one value), so each
piece's slice of the program reads the matching slice of those vectors.
"""

from __future__ import annotations

from ait_build.ir.graph import Graph, Node
from ait_build.ops.opdef import norm_axis
from ait_build.passes.fuse_elementwise import fusable, program
from ait_build.passes.rewrite import Uses, position, remove_nodes, summary, vector_len

MAX_PIECES = 64  # the GPU kernel takes one pointer per piece as a kernel argument


def _channel_operand(graph: Graph, tensor: str, channels: int, rank: int) -> bool:
    shape = tuple(graph.tensors[tensor].shape)
    return len(shape) <= rank and vector_len(shape) in (1, channels)


def _as_program(graph: Graph, reader: Node, joined: str) -> tuple:
    """(other inputs, program steps) of `reader` with the concat as x0 and the rest after it."""
    if reader.op == "fused_elementwise":
        inputs, steps = list(reader.inputs), reader.attrs["program"]
    else:
        inputs, steps = program(graph, [reader])
    others = [t for t in inputs if t != joined]
    rename = {f"x{i}": ("x0" if t == joined else f"x{1 + others.index(t)}")
              for i, t in enumerate(inputs)}
    steps = tuple((op, tuple(rename.get(a, a) for a in args), pairs) for op, args, pairs in steps)
    return others, steps


def fusable_reader(graph: Graph, uses: Uses, concat: Node) -> Node | None:
    out = graph.tensors[concat.output]
    rank = len(out.shape)
    if norm_axis(concat.attrs["axis"], rank) != rank - 1 or len(concat.inputs) > MAX_PIECES:
        return None
    if not out.shape[-1].is_static:
        return None
    reader = uses.only_reader(concat.output)
    if reader is None or not (reader.op == "fused_elementwise" or fusable(reader)):
        return None
    if tuple(graph.tensors[reader.output].shape) != tuple(out.shape):
        return None
    channels = out.shape[-1].value
    others = [t for t in reader.inputs if t != concat.output]
    return reader if all(_channel_operand(graph, t, channels, rank) for t in others) else None


def run(graph: Graph, target) -> str:
    uses = Uses(graph)
    done = []
    for concat in [n for n in graph.nodes if n.op == "concat"]:
        reader = fusable_reader(graph, uses, concat)
        if reader is None:
            continue
        others, steps = _as_program(graph, reader, concat.output)
        fused = Node(reader.name, "concat_elementwise", list(concat.inputs) + others,
                     list(reader.outputs), {"pieces": len(concat.inputs), "program": steps}, {},
                     reader.loc)
        graph.nodes[position(graph, reader)] = fused
        done.append(concat)
    remove_nodes(graph, done)
    return summary((len(done), "concats fused with the elementwise program after them"))
