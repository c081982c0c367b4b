"""Squeeze-excitation gates on the cpu backend. MobileNetV3, EfficientNet and RegNetY compute a
per-channel gate from a feature map: global_avg_pool -> 1x1 conv (activation) -> 1x1 conv
(sigmoid or hard sigmoid), and multiply the map by it. Lowered node by node the gate is three
kernels, two of them GEMMs of one row per image through the BLAS, each a pool job of its own.
Here the pool's and the first conv's lowerings emit nothing and the second conv's emits one
kernel (templates/cpu/squeeze_excite.cpp.j2): the means (global_avg_pool's loop, reading the map
where it lies), then both products with their biases and activations, image by image.

The multiply by the gate, where only a 1x1 conv reads its product (the block's projection) and
the map has more pixels than the conv has outputs, is folded into that conv: the multiply emits
nothing and the conv multiplies the map by its weights with their rows scaled by the image's gate
(gemm.lower_conv2d's `scale`; C x O products per image instead of HW x C), so the product is
never written out and read back. Where the map is smaller (7x7 maps of 1152 channels) the
multiply stays."""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.backends import shared
from ait_build.backends.cpu import gemm
from ait_build.codegen import rows_and_windows
from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.elementwise import ACT
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.op_geometry import window_attrs
from ait_build.codegen.plan import Lowerer

POINTWISE = dict(kh=1, kw=1, sh=1, sw=1, ph=0, pw=0, dh=1, dw=1)
MUL = shared.ELEMENTWISE["mul"]


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


def lower_global_avg_pool(lw) -> None:
    if lw.node.name not in gates(lw.plan.graph):
        rows_and_windows.lower_global_avg_pool(lw)


def lower_conv2d(lw) -> None:
    graph = lw.plan.graph
    gate, scale = gates(graph).get(lw.node.name), scales(graph).get(lw.node.name)
    if gate is None:
        gemm.lower_conv2d(lw, (scale.map, scale.gate) if scale else None)
    elif lw.node.name == gate.fc2.name:
        _lower_gate(lw, gate)
    # the first conv: computed by the gate's kernel


def lower_mul(lw) -> None:
    if lw.node.name not in scales(lw.plan.graph):  # else the conv after it scales its rows
        MUL(lw)


def _lower_gate(lw, gate: Gate) -> None:
    x = gate.pool.inputs[0]
    n, h, w, c = lw.shape(x)
    convs = [Lowerer(lw.plan, gate.fc1), lw]
    sizes = [lw.shape(gate.fc1.output)[-1], lw.shape(gate.fc2.output)[-1]]  # S, O
    weights, params, args = [], [], []
    context = dict(means="pooled")
    for i, (conv, k, o) in enumerate(zip(convs, [c] + sizes[:1], sizes), start=1):
        attrs = conv.node.attrs
        kv, ov = k.value, o.value
        # the im2col layout of a 1x1 conv, [1][1][1][in][out]: the same weight as conv2d's
        weights.append(conv.weight("weight", lambda a, ov=ov, kv=kv: a.reshape(1, ov, kv, 1, 1)
                                   .transpose(0, 3, 4, 2, 1), "ghwio", (1, 1, 1, kv, ov)))
        params.append(("const float*", f"w{i}"))
        args.append(weights[-1])
        if attrs["bias"]:
            params.append(("const float*", f"b{i}"))
            args.append(conv.weight("bias"))
        context.update({f"bias{i}": bool(attrs["bias"]),
                        f"act{i}": ACT[attrs.get("activation", "none")]})
    params = [("float*", "out"), ("const float*", "x")] + params
    params += [("int64_t", p) for p in ("N", "HW", "C", "S", "O")]
    kernel = make_kernel("squeeze_excite", "conv2d", "cpu/squeeze_excite.cpp.j2", context, params)
    s, o = sizes
    call_args = [lw.dst(gate.fc2.output), lw.src(x)] + args
    call_args += [cexpr(v) for v in (n, h * w, c, s, o)]
    lw.call(kernel, call_args, scratch_shared=lw.at_max(n * (c + s)) * 4,
            flops=n * (h * w * c + 2 * (c * s + s * o)))
