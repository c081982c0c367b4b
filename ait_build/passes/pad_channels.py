"""Layout: activations are NHWC from the spec on, so what is left is channel alignment.

Tensor-core GEMM/conv kernels load rows with wide vector (TMA: 16-byte) accesses, so the reduced
dim, the channels of a conv input or the features of a linear input, must be a multiple of the
target's `channel_alignment`. When it is not (the 3-channel image of a stem conv), a `pad` node
appends zero channels and the weight gets matching zero input channels (`<op>.padded_weight`):
the extra products are zero, so the numerics are unchanged. Convs and linears that read the same
tensor share one pad. With alignment 1 (cpu) the pass changes nothing.

A conv over fewer channels than the alignment whose windows span several pixels (`gathers_windows`:
the stem of an image model) is left alone: the GPU lowering gathers each output pixel's window
into one GEMM row of KH*KW*C values (backends/gpu/gemm.py), so padding C would only add zero
columns to that row. The lowering asks the same function, so the two never disagree.

Output channels are left alone: padding them would need a slice after the op. Weight re-layout
(OIHW -> OHWI, ...) is a backend choice and happens when a backend writes its weights file.
"""

from __future__ import annotations

import numpy as np

from ait_build.ir.graph import Graph, Node
from ait_build.ops.conv import window_params
from ait_build.ops.opdef import TType
from ait_build.passes.rewrite import add_weight, free_name, insert_before, node_names, new_value, summary

# op -> axis of its weight that holds the input channels
WEIGHT_IN_AXIS = {"conv2d": 1, "linear": 1}
# the input rows one output pixel's window spans must fit the im2col kernel's shared-memory strip
# (backends/gpu/im2col.STRIP_BYTES, 24 KB) in float32; a wider window pads its channels instead
STRIP_ELEMENTS = 6 * 1024


def gathers_windows(graph: Graph, node: Node, align: int, below: int = 0) -> bool:
    """Whether `node` is a conv that a target of channel alignment `align` runs as an explicit
    im2col + GEMM over its unpadded channels: one group, static input channels below the
    alignment, a window of more than one pixel (or a stride), aligned output channels. A target's
    `im2col_channels` (`below`) extends that to aligned channels below it when the outputs are at
    least as many (a GEMM of that width is compute-bound enough to pay for writing the rows)."""
    if node.op != "conv2d" or node.attrs.get("groups", 1) != 1 or align <= 1:
        return False
    channels = graph.tensors[node.inputs[0]].shape[-1]
    out_channels = graph.tensors[node.output].shape[-1]
    if not (channels.is_static and out_channels.is_static):
        return False
    c, o = channels.value, out_channels.value
    (kh, kw), (sh, sw), _, (_, dw) = window_params(node.attrs)
    few = c < align or (c < below and o >= below)
    return (few and o % align == 0 and (kh * kw > 1 or sh * sw > 1)
            and kh * ((kw - 1) * dw + 1) * c <= STRIP_ELEMENTS)


def _needs_pad(graph: Graph, node: Node, align: int) -> int:
    """How many zero channels `node`'s input needs, or 0."""
    if node.op not in WEIGHT_IN_AXIS or node.attrs.get("groups", 1) != 1:
        return 0
    if gathers_windows(graph, node, align):
        return 0
    channels = graph.tensors[node.inputs[0]].shape[-1]
    if not channels.is_static:
        return 0
    return -channels.value % align


def channel_pads(rank: int, extra: int) -> tuple:
    """A `pad` node's `pads` that append `extra` channels to a tensor of `rank` dims."""
    return (0, 0) * (rank - 1) + (0, extra)


def channel_pad(graph: Graph, tensor: str, extra: int, names: set, like: Node) -> Node:
    """A pad node appending `extra` zero channels to `tensor` (`<tensor>.channel_pad`), placed
    and located like `like`; the caller inserts it."""
    src = graph.tensors[tensor]
    shape = tuple(src.shape[:-1]) + (src.shape[-1] + extra,)
    name = free_name(names, f"{src.name}.channel_pad")
    names.add(name)
    out = new_value(graph, name, TType(shape, src.dtype), like)
    return Node(name, "pad", [tensor], [out], {"pads": channel_pads(len(shape), extra),
                                               "value": 0.0}, {}, like.loc)


def pad_weight(graph: Graph, node: Node, role: str, axis: int, extra: int) -> None:
    """`node`'s weight `role` with `extra` zeros appended along `axis`, as a new build-time
    weight (`<node>.padded_<role>`)."""
    name = node.weights[role]
    value = graph.weights.get(name)
    widths = [(0, 0)] * value.ndim
    widths[axis] = (0, extra)
    tensor = graph.tensors[name]
    node.weights[role] = add_weight(graph, f"{node.name}.padded_{role}", np.pad(value, widths),
                                    tensor.dtype, tensor)


def run(graph: Graph, target) -> str:
    align = target.cap("channel_alignment")
    if align <= 1:
        return ""
    names = node_names(graph)
    pads: dict = {}  # (input tensor, extra) -> pad node, shared by every op reading it
    padded = 0
    gathered = sum(gathers_windows(graph, node, align) for node in graph.nodes)
    for node in list(graph.nodes):
        extra = _needs_pad(graph, node, align)
        if not extra:
            continue
        key = (node.inputs[0], extra)
        if key not in pads:
            pads[key] = channel_pad(graph, node.inputs[0], extra, names, node)
            insert_before(graph, node, pads[key])
        node.inputs[0] = pads[key].output
        in_out = node.attrs.get("weight_layout") == "in_out"  # a [in, out] linear weight (GPT-2)
        pad_weight(graph, node, "weight", 0 if in_out else WEIGHT_IN_AXIS[node.op], extra)
        padded += 1
    graph.remove_unused_tensors()
    return summary((padded, f"conv/linear inputs padded to a multiple of {align} channels"),
                   (len(pads), "pad nodes added"),
                   (gathered, "convs left unpadded: their windows are gathered into GEMM rows"))
