"""Output channels the GPU's tensor-core kernels cannot write: pad them, slice after.

A 16-bit conv or linear with an odd number of output channels (a detection head's 255 =
3 x (80 + 5), a segmentation head's 21 classes, an image's 3 channels, GPT-2's 50257-word
vocabulary) has rows the GEMM and conv kernels cannot store even as 4-byte pairs, so the GPU
lowering would run it on its plain kernels (one output per thread, or 16x16 tiles on CUDA cores):
ten to a hundred times slower than the tensor-core kernels at a large batch. This pass gives such
a node zero filters (and a zero bias) up to the next multiple of the target's `channel_alignment`
and takes the real channels back with a `slice` after it: the extra channels cost a few percent
more multiplies and one copy of the output. Even widths (ShuffleNetV2's 58) keep their channels:
the kernels take them in narrower vectors, and a slice kernel would cost more than it saves.

It runs after epilogue fusion, so the bias and activation are already inside the node (an
activation of the zero channels is never read); a fused residual (LR-ASPP's two classifiers
summed) gets zero channels by a `pad` before the node. Where the activation maps 0 to 0 the extra
channels are zeros, so a `pad_channels` pad of the output back to the same width reads the wide
output instead and the slice goes if nothing else reads it; for that, even widths are padded too
when a zero pad to that width is all that reads them (EfficientNet's squeeze-excitation FCs of 36
or 60 channels: one kernel fewer each). float32 keeps its channels: its GEMMs take single-element
rows. With alignment 1 (cpu, rocm) the pass changes nothing.
"""

from __future__ import annotations

import numpy as np

from ait_build.ir.graph import Graph, Node
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import HALF_DTYPES
from ait_build.ops.epilogue import apply_epilogue
from ait_build.ops.opdef import TType
from ait_build.passes.pad_channels import channel_pad, channel_pads, pad_weight
from ait_build.passes.rewrite import (free_name, insert_before, new_value, node_names, position,
                                      replace_uses, summary)

# op -> attribute holding the output channels
OUT_ATTR = {"conv2d": "out_channels", "linear": "out_features"}


def _extra(graph: Graph, node: Node, align: int) -> int:
    """How many zero output channels `node` gets, or 0: odd widths always, even ones where only
    zero pads to the aligned width read them and the activation keeps the padding zero."""
    if node.op not in OUT_ATTR or node.attrs.get("groups", 1) != 1:
        return 0
    out = graph.tensors[node.output]
    if out.dtype not in HALF_DTYPES or not out.shape[-1].is_static:
        return 0
    extra = -out.shape[-1].value % align
    if out.shape[-1].value % 2 == 0 and extra:
        readers = [n for n in graph.nodes if node.output in n.inputs]
        whole = readers and node.output not in graph.outputs and \
            all(_pads_to(graph, n, node.output, extra) for n in readers)
        return extra if whole and _zero_keeping(node) else 0
    return extra


def _zero_keeping(node: Node) -> bool:
    """Whether the node's activation maps 0 to 0 (its padded channels stay zeros)."""
    return not np.any(apply_epilogue(np.zeros(1, np.float32), node.attrs))


def _pads_to(graph: Graph, pad: Node, tensor: str, extra: int) -> bool:
    """Whether `pad` appends `extra` zero channels to `tensor` and nothing else."""
    rank = len(graph.tensors[tensor].shape)
    return (pad.op == "pad" and pad.inputs == [tensor]
            and float(pad.attrs.get("value", 0.0)) == 0.0
            and tuple(pad.attrs["pads"]) == channel_pads(rank, extra))


def _read_wide(graph: Graph, take: Node, extra: int) -> int:
    """Zero pads of the slice's output back to the wide width read the wide tensor itself (its
    extra channels are zeros); the slice goes when nothing reads it then. Returns the pads."""
    wide, out = take.inputs[0], take.output
    pads = [n for n in graph.nodes if _pads_to(graph, n, out, extra)]
    for pad in pads:
        replace_uses(graph, pad.output, wide)
    readers = [n for n in graph.nodes if out in n.inputs and n not in pads]
    dead = pads + ([take] if not readers and out not in graph.outputs else [])
    graph.nodes = [n for n in graph.nodes if not any(n is d for d in dead)]
    return len(pads)


def run(graph: Graph, target) -> str:
    align = target.cap("channel_alignment")
    if align <= 1:
        return ""
    names = node_names(graph)
    padded = wide_reads = 0
    for node in list(graph.nodes):
        extra = _extra(graph, node, align)
        if not extra:
            continue
        out = graph.tensors[node.output]
        channels = out.shape[-1].value
        shape = tuple(out.shape[:-1]) + (Dim.of(channels + extra),)
        wide = new_value(graph, f"{node.output}.wide", TType(shape, out.dtype), node)
        name = free_name(names, f"{node.name}.channels")
        names.add(name)
        take = Node(name, "slice", [wide], [node.output],
                    {"axis": len(out.shape) - 1, "start": Dim.of(0), "end": Dim.of(channels),
                     "step": 1}, {}, node.loc)
        if len(node.inputs) > 1:  # the fused residual, as wide as the output
            pad = channel_pad(graph, node.inputs[1], extra, names, node)
            insert_before(graph, node, pad)
            node.inputs[1] = pad.output
        node.outputs = [wide]
        node.attrs[OUT_ATTR[node.op]] = channels + extra
        in_out = node.attrs.get("weight_layout") == "in_out"  # a [in, out] linear weight (GPT-2)
        pad_weight(graph, node, "weight", 1 if in_out else 0, extra)
        if "bias" in node.weights:
            pad_weight(graph, node, "bias", 0, extra)
        graph.nodes.insert(position(graph, node) + 1, take)
        padded += 1
        if _zero_keeping(node):
            wide_reads += _read_wide(graph, take, extra)
    graph.remove_unused_tensors()
    return summary((padded, f"conv/linear outputs padded to a multiple of {align} channels "
                            "and sliced back"),
                   (wide_reads, "channel pads after them read the padded output instead"))
