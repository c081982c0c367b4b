"""Epilogue fusion: GEMM-shaped ops (conv2d, linear, matmul, bmm) absorb the elementwise ops that
follow them, in the epilogue's order out = act(acc + bias + residual):

- an add of a per-channel vector (a `parameter` output of shape [N] or [1, .., N]) becomes, or is
  added into, the op's `bias` weight (matmul/bmm have no bias role and take it as the residual);
- an add of a tensor that broadcasts to the output without growing it becomes the residual input;
- a mul by a per-channel vector (a `parameter` as above: ConvNeXt's and CaiT's layer scale)
  before any residual folds into a conv2d's or linear's weight and bias (w' = w * g, b' = b * g),
  as batch norm does (fold_batchnorm.py, which folds a mul by a number);
- an activation ends the chain: relu, gelu (erf or tanh), silu, sigmoid, tanh, hardswish, relu6,
  hardtanh and clamp (as `hardtanh` with their bounds, an open side infinite), leaky_relu (its
  slope as `leaky_slope`), and the importers' hardsigmoid, add 3 -> relu6 -> div 6, as
  `hardsigmoid`. An activation after a reshape of the output (a conv1d's, imported as a conv2d
  and a reshape: wav2vec2's and Whisper's feature convs; SegFormer's depthwise conv flattened
  before its GELU) is taken too, the reshape then reading the activated output: elementwise
  ops do not see shapes.

Each absorbed op must be the only reader of the value before it, so no intermediate is needed
elsewhere. When the residual is computed after the GEMM (ResNet's downsample branch), the GEMM
moves down to the add's place in the order. Gated on the target's `fused_epilogue` capability.
"""

from __future__ import annotations

import math

from ait_build.errors import OpError
from ait_build.ir.graph import Graph, Node
from ait_build.ops.elementwise import clamp_bounds
from ait_build.ops.opdef import broadcast_shapes
from ait_build.passes.eliminate_dead_code import remove_dead
from ait_build.passes.rewrite import Uses, add_weight, position, summary, vector_len

GEMMS = ("conv2d", "linear", "matmul", "bmm")
WITH_BIAS_ROLE = ("conv2d", "linear")
DATA_INPUTS = {"conv2d": 1, "linear": 1, "matmul": 2, "bmm": 2}  # before the optional residual
ACTIVATION_OPS = ("relu", "silu", "sigmoid", "tanh", "hardswish", "gelu")
CLAMP_OPS = ("relu6", "hardtanh", "clamp")


def _clamp_activation(node: Node) -> tuple:
    """(activation, its attrs) of a clamp-family node."""
    low, high = clamp_bounds(node.op, node.attrs)
    low = -math.inf if low is None else float(low)
    high = math.inf if high is None else float(high)
    if (low, high) == (0.0, 6.0):
        return "relu6", {}
    if (low, high) == (0.0, math.inf):  # relu keeps a NaN and turns -0 into 0, as max(x, 0)
        return "relu", {}
    return "hardtanh", {"hardtanh_min": low, "hardtanh_max": high}


def _scalar_step(node: Node | None, op: str, value: float) -> bool:
    return node is not None and node.op == op and node.attrs.get("scalar") == value


def activation_of(uses: Uses, node: Node) -> tuple | None:
    """(activation, attrs it sets, nodes it replaces) when `node` starts an activation."""
    if node.op == "gelu":
        return ("gelu_tanh" if node.attrs["approximate"] == "tanh" else "gelu"), {}, [node]
    if node.op in ACTIVATION_OPS:
        return node.op, {}, [node]
    if node.op in CLAMP_OPS:
        return (*_clamp_activation(node), [node])
    if node.op == "leaky_relu":
        return "leaky_relu", {"leaky_slope": node.attrs["negative_slope"]}, [node]
    if _scalar_step(node, "add", 3.0):  # hardsigmoid as the importers write it
        clip = uses.only_reader(node.output)
        if clip is not None and clip.op in CLAMP_OPS and _clamp_activation(clip)[0] == "relu6":
            div = uses.only_reader(clip.output)
            if _scalar_step(div, "div", 6.0):
                return "hardsigmoid", {}, [node, clip, div]
    return None


def _take_bias(graph: Graph, uses: Uses, gemm: Node, other: str) -> bool:
    param = uses.made_by(other, "parameter")
    out = graph.tensors[gemm.output]
    if gemm.op not in WITH_BIAS_ROLE or param is None or out.shape[-1] != vector_len(
            graph.tensors[other].shape) or graph.tensors[other].dtype != out.dtype:
        return False
    source = param.weights["value"]
    if "bias" in gemm.weights or len(graph.tensors[source].shape) != 1:
        value = graph.weights.get(source).reshape(-1)
        if "bias" in gemm.weights:
            value = graph.weights.get(gemm.weights["bias"]) + value
        source = add_weight(graph, f"{gemm.name}.fused_bias", value, out.dtype, graph.tensors[source])
    gemm.weights["bias"] = source  # a plain weight read: the parameter node may become dead
    gemm.attrs["bias"] = True
    return True


def _take_residual(graph: Graph, uses: Uses, gemm: Node, other: str, add: Node) -> bool:
    out = graph.tensors[gemm.output]
    if len(gemm.inputs) != DATA_INPUTS[gemm.op] or other == gemm.output \
            or graph.tensors[other].dtype != out.dtype:
        return False
    try:  # the residual may broadcast up to the output, never grow it
        if broadcast_shapes(out.shape, graph.tensors[other].shape) != tuple(out.shape):
            return False
    except OpError:
        return False
    maker = uses.made_by(other)
    if maker is not None and position(graph, maker) > position(graph, gemm):
        # the residual is computed after the GEMM: run the GEMM at the add's place instead
        graph.nodes = [n for n in graph.nodes if n is not gemm]
        graph.nodes.insert(position(graph, add), gemm)
    uses.add_input(gemm, other)
    return True


def _take_scale(graph: Graph, uses: Uses, gemm: Node, other: str) -> bool:
    param = uses.made_by(other, "parameter")
    out = graph.tensors[gemm.output]
    if gemm.op not in WITH_BIAS_ROLE or param is None or len(gemm.inputs) != DATA_INPUTS[gemm.op] \
            or gemm.attrs.get("weight_layout", "out_in") != "out_in" \
            or graph.tensors[other].dtype != out.dtype \
            or out.shape[-1] != vector_len(graph.tensors[other].shape):
        return False
    scale = graph.weights.get(param.weights["value"]).reshape(-1)
    weight = graph.weights.get(gemm.weights["weight"])
    like = graph.tensors[gemm.weights["weight"]]
    bias = graph.weights.get(gemm.weights["bias"]) if "bias" in gemm.weights else 0.0
    gemm.weights = {  # output channels lead both layouts (OIHW, [out, in])
        "weight": add_weight(graph, f"{gemm.name}.scaled_weight",
                             weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1)), like.dtype,
                             like),
        "bias": add_weight(graph, f"{gemm.name}.scaled_bias", bias * scale, like.dtype, like)}
    gemm.attrs["bias"] = True
    return True


def fuse_into(graph: Graph, gemm: Node, counts: dict, uses: Uses) -> None:
    """Absorbs the chain of bias, channel scale, residual and activation after `gemm`; `uses`
    follows each edit."""
    while gemm.attrs["activation"] == "none":
        nxt = uses.only_reader(gemm.output)
        if nxt is None or graph.tensors[nxt.output].dtype != graph.tensors[gemm.output].dtype:
            break
        act = activation_of(uses, nxt)
        if act is not None:
            name, attrs, nodes = act
            gemm.attrs.update(attrs, activation=name)
            counts["activations"] += 1
            _absorb(graph, uses, gemm, nodes)
            continue
        if nxt.op in ("reshape", "flatten"):
            after = uses.only_reader(nxt.output)
            act = activation_of(uses, after) if after is not None and \
                graph.tensors[after.output].dtype == graph.tensors[nxt.output].dtype else None
            if act is None:
                break
            name, attrs, nodes = act
            gemm.attrs.update(attrs, activation=name)
            counts["activations"] += 1
            _absorb(graph, uses, nxt, nodes)  # the reshape makes what the activation made
            continue
        two = nxt.op in ("add", "mul") and nxt.attrs.get("scalar") is None
        other = (nxt.inputs[1] if nxt.inputs[0] == gemm.output else nxt.inputs[0]) if two else None
        if nxt.op == "add" and two:
            if _take_bias(graph, uses, gemm, other):
                counts["bias adds"] += 1
            elif _take_residual(graph, uses, gemm, other, nxt):
                counts["residual adds"] += 1
            else:
                break
        elif nxt.op == "mul" and two and _take_scale(graph, uses, gemm, other):
            counts["channel scales"] += 1
        else:
            break
        _absorb(graph, uses, gemm, [nxt])


def _absorb(graph: Graph, uses: Uses, gemm: Node, nodes: list) -> None:
    """`gemm` (or the reshape after it) makes the last of `nodes`' outputs; they leave the
    graph."""
    for m in nodes:
        uses.forget(m)
    uses.set_outputs(gemm, nodes[-1].outputs)
    graph.nodes = [n for n in graph.nodes if all(n is not m for m in nodes)]


def run(graph: Graph, target) -> str:
    if not target.cap("fused_epilogue"):
        return ""
    counts = {"bias adds": 0, "residual adds": 0, "channel scales": 0, "activations": 0}
    uses = Uses(graph)
    for gemm in [n for n in graph.nodes if n.op in GEMMS]:
        fuse_into(graph, gemm, counts, uses)
    dead = remove_dead(graph)  # parameter reads whose vector became a bias role
    graph.remove_unused_tensors()
    return summary(*[(n, f"{what} fused") for what, n in counts.items()],
                   (dead, "parameter reads dropped"))
