"""Data-movement fusion: a chain of reshapes, permutes/transposes, slices, outputs of a split and
constant pads (one input each) between compute ops becomes one `strided_copy` node
(ops/fused.py), which every backend runs as one copy: the composed index map is a strided view
of the chain's input (ops/strided_view.py), and pads are bounds in the same kernel (out of range:
the pad value). ShuffleNet's channel shuffle, split half and channel pad (reshape, permute,
reshape, split, pad: three copies and a fill) read the concat once and write the padded half
once.

Chains are cut where a value is needed by anything other than the next step (another reader, a
graph output): that value is written, and the chain after it starts from it. They are also cut
before a step the view cannot absorb (a reshape splitting a merged dim at a point that is not a
whole number of its inner axes, a pad with another value): the chain before it is written, and
the step starts the next one.

A split is a step of one output: each output's chain runs from the chain's start on its own, so
the steps before the split are done once per output. That computes nothing twice: they are pure
copies (every element read from at most one input element), and the outputs of a split are
disjoint parts of its input, so together the per-output copies read at most the bytes the one
chain did, and write only the outputs.

A chain is fused only where it saves a pass: at least two steps that move bytes (reshapes are
views), or a split whose other outputs' chains are fused (its copy of that output moves the same
bytes as the fused one). A lone permute, slice or pad keeps its own lowering.

A fused chain that starts at a concat read by nothing else reads the concat's pieces itself
(attr `concat_axis`): the concat is not written at all. ShuffleNet's block output (the concat of
its two branches) goes straight into the next block's shuffled halves. Only where the pieces and
everything inside the concat axis have static sizes (the kernel splits an offset into a row of
the concat and a position in it by constants), and at most MAX_PIECES pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.ir.dims import Dim, numel
from ait_build.ir.graph import Graph, Node
from ait_build.ops import strided_view
from ait_build.ops.opdef import norm_axis
from ait_build.ops.shape import split_sizes
from ait_build.passes.rewrite import (Uses, free_name, insert_before, node_names, permute_dims,
                                      remove_nodes, summary)

LINKS = ("reshape", "flatten", "permute", "transpose", "slice", "split", "pad")
MAX_PIECES = 8  # concat pieces a strided copy reads (one pointer argument each)
VIEWS = ("reshape",)  # steps that move no bytes on their own


@dataclass
class Chain:
    source: str  # the tensor the chain reads
    steps: tuple  # strided_copy steps: (op, ((attr, value), ...), output shape)
    nodes: tuple  # the graph nodes it covers, in order
    view: strided_view.View


def _steps(graph: Graph, node: Node) -> list:
    """One strided_copy step per output of `node` (a split's are slices)."""
    shape = lambda t: tuple(graph.tensors[t].shape)  # noqa: E731
    out = shape(node.outputs[0])
    if node.op in ("reshape", "flatten"):
        return [("reshape", (("shape", out),), out)]
    if node.op in ("permute", "transpose"):
        return [("permute", (("dims", permute_dims(graph, node)),), out)]
    if node.op == "slice":
        return [("slice", tuple(sorted(node.attrs.items())), out)]
    if node.op == "pad":
        return [strided_view.pad_step(node.attrs, out)]
    x = shape(node.inputs[0])
    axis = norm_axis(node.attrs["axis"], len(x))
    steps, at = [], Dim.of(0)
    for t, size in zip(node.outputs, split_sizes(node.attrs, x[axis])):
        attrs = (("axis", axis), ("end", at + size), ("start", at), ("step", 1))
        steps.append(("slice", attrs, shape(t)))
        at = at + size
    return steps


def _chains(graph: Graph, uses: Uses) -> tuple:
    """({tensor: the Chain that ends there}, {tensors a chain was cut at}) over every link in
    graph order: a link continues the chain of its input when that input is interior (read by
    it alone) and the view absorbs every output's step, else it starts a chain at its input."""
    chains: dict = {}
    cut: set = set()
    for node in graph.nodes:
        if node.op not in LINKS:
            continue
        x = node.inputs[0]
        steps = _steps(graph, node)
        before = chains.get(x) if x not in cut else None  # an interior value: continue
        made = None
        if before is not None:
            views = [strided_view.then(before.view, s, graph.tensors[x].shape) for s in steps]
            if all(v is not None for v in views):
                made = [Chain(before.source, before.steps + (s,), before.nodes + (node,), v)
                        for s, v in zip(steps, views)]
            else:
                cut.add(x)
        if made is None:
            views = [strided_view.compose(graph.tensors[x].shape, [s]) for s in steps]
            if any(v is None for v in views):
                cut.add(x)  # the step alone is no view: the node stays, reading `x`
                continue
            made = [Chain(x, (s,), (node,), v) for s, v in zip(steps, views)]
        for t, chain in zip(node.outputs, made):
            reader = uses.only_reader(t)
            chains[t] = chain
            if reader is None or reader.op not in LINKS:
                cut.add(t)  # read elsewhere: written here
    return chains, cut


def _absorbed_concat(graph: Graph, uses: Uses, chain: Chain) -> Node | None:
    """The concat that `chain` (and the others of its family) can read piece by piece."""
    concat = uses.made_by(chain.source, "concat")
    if concat is None or uses.only_reader(chain.source) is not chain.nodes[0]:
        return None
    shape = graph.tensors[chain.source].shape
    axis = norm_axis(concat.attrs["axis"], len(shape))
    pieces = [graph.tensors[t].shape[axis] for t in concat.inputs]
    if len(pieces) > MAX_PIECES or not numel(shape[axis + 1:]).is_static:
        return None
    return concat if all(d.is_static for d in pieces) else None


def _moves(chain: Chain) -> int:
    return sum(1 for op, _, _ in chain.steps if op not in VIEWS)


def run(graph: Graph, target) -> str:
    uses = Uses(graph)
    chains, cut = _chains(graph, uses)
    ends = [t for t in chains if t in cut and (uses.of(t) or t in uses.outputs)]
    families: dict = {}  # id(first node) -> ends whose chains share it (a split's outputs)
    for t in ends:
        families.setdefault(id(chains[t].nodes[0]), []).append(t)
    fused = [ts for ts in families.values() if any(_moves(chains[t]) >= 2 for t in ts)]
    replaced = {id(n): n for ts in fused for t in ts for n in chains[t].nodes}
    names = node_names(graph) - {n.name for n in replaced.values()}
    concats = 0
    for ts in fused:
        concat = _absorbed_concat(graph, uses, chains[ts[0]])
        if concat is not None:
            replaced[id(concat)] = concat
            concats += 1
        for t in ts:
            chain = chains[t]
            last = chain.nodes[-1]
            name = free_name(names, last.name)
            names.add(name)
            inputs, attrs = [chain.source], {"steps": chain.steps}
            if concat is not None:
                inputs = list(concat.inputs)
                attrs["concat_axis"] = norm_axis(concat.attrs["axis"],
                                                 len(graph.tensors[chain.source].shape))
            insert_before(graph, last, Node(name, "strided_copy", inputs, [t], attrs, {},
                                            last.loc))
    remove_nodes(graph, replaced.values())
    count = sum(len(ts) for ts in fused)
    return summary((count, f"chains of {len(replaced) - concats} data-movement ops -> strided "
                           "copies"), (concats, "concats read piece by piece"))
