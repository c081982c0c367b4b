"""Squeeze-excitation blocks as every backend finds them in a graph. MobileNetV3, EfficientNet and
RegNetY compute a per-channel gate from a feature map (global_avg_pool -> 1x1 conv -> 1x1 conv)
and multiply the map by it; the block's projection, a 1x1 conv, then reads the product.

`gates` and `scales` find them in a graph; lowerings ask `plan_gates` and `plan_scales`, found
once per plan. `scales` names the multiplies a backend may fold into that conv: where the map
has more pixels than the conv has outputs, scaling the conv's weights per image (C x O products)
moves fewer bytes than scaling the map (HW x C), and the product is never written out and read
back. The cpu backend scales the weights inside its conv kernel (backends/cpu/squeeze_excite.py),
the GPU layer in a small kernel before a GEMM batched over the images
(backends/gpu/squeeze_excitation.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.codegen.op_geometry import window_attrs

POINTWISE = dict(kh=1, kw=1, sh=1, sw=1, ph=0, pw=0, dh=1, dw=1)


@dataclass(frozen=True)
class Scale:
    mul: object  # the multiply of the map by the gate
    map: str
    gate: str
    conv: object  # the 1x1 conv that alone reads the product


@dataclass(frozen=True)
class Gate:
    pool: object  # the global_avg_pool node
    fc1: object  # the two 1x1 convs
    fc2: object


def _pointwise_of(node, tensor: str, residual: bool = False) -> bool:
    """A 1x1 ungrouped conv of `tensor` (and of nothing else, unless `residual`)."""
    return (node.op == "conv2d" and node.inputs[0] == tensor and node.attrs["groups"] == 1 and
            (residual or len(node.inputs) == 1) and window_attrs(node.attrs) == POINTWISE)


def gates(graph) -> dict:
    """node name -> the Gate it belongs to, for every pool -> 1x1 conv -> 1x1 conv chain whose
    pooled and hidden tensors nothing else reads."""
    users = graph.consumers()
    found = {}
    for pool in graph.nodes:
        if pool.op != "global_avg_pool" or not pool.attrs.get("keepdims"):
            continue
        chain = [pool]
        while len(chain) < 3:
            tensor = chain[-1].output
            readers = users.get(tensor, [])
            if tensor in graph.outputs or len(readers) != 1 or not _pointwise_of(readers[0], tensor):
                break
            chain.append(readers[0])
        if len(chain) == 3:
            gate = Gate(*chain)
            found.update({node.name: gate for node in chain})
    return found


def scales(graph) -> dict:
    """node name -> the Scale it belongs to (the multiply and its conv), for every multiply of a
    map by a gate whose product only a 1x1 conv reads, as its input."""
    users = graph.consumers()
    gate_outputs = {g.fc2.output for g in gates(graph).values()}
    found = {}
    for mul in graph.nodes:
        if mul.op != "mul" or len(mul.inputs) != 2 or mul.output in graph.outputs:
            continue
        readers = users.get(mul.output, [])
        if len(readers) != 1 or not _pointwise_of(readers[0], mul.output, residual=True):
            continue
        for gate, fmap in (mul.inputs, mul.inputs[::-1]):
            shape = graph.tensors[mul.output].shape
            pixels = shape[1] * shape[2] if len(shape) == 4 else None
            if (gate in gate_outputs and graph.tensors[fmap].shape == shape and pixels is not None
                    and pixels.is_static and pixels.value > readers[0].attrs["out_channels"]):
                scale = Scale(mul, fmap, gate, readers[0])
                found.update({mul.name: scale, readers[0].name: scale})
                break
    return found


def plan_gates(plan) -> dict:
    """`gates` of the plan's graph, found once."""
    return plan.memo("squeeze_excitation.gates", lambda: gates(plan.graph))


def plan_scales(plan) -> dict:
    """`scales` of the plan's graph, found once."""
    return plan.memo("squeeze_excitation.scales", lambda: scales(plan.graph))
