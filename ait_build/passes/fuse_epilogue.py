"""Epilogue fusion: GEMM-shaped ops (conv2d, linear, matmul, bmm) absorb the elementwise ops that
follow them, in the epilogue's order out = act(acc + bias + residual):

- an add of a per-channel vector (a `parameter` output of shape [N] or [1, .., N]) becomes, or is
  added into, the op's `bias` weight (matmul/bmm have no bias role and take it as the residual);
- an add of a tensor that broadcasts to the output without growing it becomes the residual input;
- an activation (relu, gelu, gelu tanh, silu, sigmoid, tanh, hardswish) ends the chain.

Each absorbed op must be the only reader of the value before it, so no intermediate is needed
elsewhere. When the residual is computed after the GEMM (ResNet's downsample branch), the GEMM
moves down to the add's place in the order. Gated on the target's `fused_epilogue` capability.
"""

from __future__ import annotations

from ait_build.errors import OpError
from ait_build.ir.graph import Graph, Node
from ait_build.ops.opdef import broadcast_shapes
from ait_build.passes.eliminate_dead_code import remove_dead
from ait_build.passes.rewrite import Uses, add_weight, position, summary, vector_len

GEMMS = ("conv2d", "linear", "matmul", "bmm")
WITH_BIAS_ROLE = ("conv2d", "linear")
DATA_INPUTS = {"conv2d": 1, "linear": 1, "matmul": 2, "bmm": 2}  # before the optional residual
ACTIVATION_OPS = ("relu", "silu", "sigmoid", "tanh", "hardswish", "gelu")


def activation_of(node: Node) -> str | None:
    if node.op == "gelu":
        return "gelu_tanh" if node.attrs["approximate"] == "tanh" else "gelu"
    return node.op if node.op in ACTIVATION_OPS else None


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
    gemm.inputs.append(other)
    return True


def fuse_into(graph: Graph, gemm: Node, counts: dict) -> None:
    """Absorbs the chain of bias, residual and activation after `gemm`."""
    while gemm.attrs["activation"] == "none":
        uses = Uses(graph)
        nxt = uses.only_reader(gemm.output)
        if nxt is None or graph.tensors[nxt.output].dtype != graph.tensors[gemm.output].dtype:
            break
        act = activation_of(nxt)
        if act is not None:
            gemm.attrs["activation"] = act
            counts["activations"] += 1
        elif nxt.op == "add" and nxt.attrs.get("scalar") is None:
            other = nxt.inputs[1] if nxt.inputs[0] == gemm.output else nxt.inputs[0]
            if _take_bias(graph, uses, gemm, other):
                counts["bias adds"] += 1
            elif _take_residual(graph, uses, gemm, other, nxt):
                counts["residual adds"] += 1
            else:
                break
        else:
            break
        gemm.outputs = list(nxt.outputs)
        graph.nodes = [n for n in graph.nodes if n is not nxt]


def run(graph: Graph, target) -> str:
    if not target.cap("fused_epilogue"):
        return ""
    counts = {"bias adds": 0, "residual adds": 0, "activations": 0}
    for gemm in [n for n in graph.nodes if n.op in GEMMS]:
        fuse_into(graph, gemm, counts)
    dead = remove_dead(graph)  # parameter reads whose vector became a bias role
    graph.remove_unused_tensors()
    return summary(*[(n, f"{what} fused") for what, n in counts.items()],
                   (dead, "parameter reads dropped"))
