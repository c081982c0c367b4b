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
multiply stays. Which multiplies fold is codegen/squeeze_excitation.py's rule, shared with the
GPU layer."""

from __future__ import annotations

from ait_build.backends import shared
from ait_build.backends.cpu import gemm
from ait_build.codegen import rows_and_windows
from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.elementwise import ACT
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.plan import Lowerer
from ait_build.codegen.squeeze_excitation import Gate, plan_gates, plan_scales

MUL = shared.ELEMENTWISE["mul"]


def lower_global_avg_pool(lw) -> None:
    if lw.node.name not in plan_gates(lw.plan):
        rows_and_windows.lower_global_avg_pool(lw)


def lower_conv2d(lw) -> None:
    gate, scale = plan_gates(lw.plan).get(lw.node.name), plan_scales(lw.plan).get(lw.node.name)
    if gate is None:
        gemm.lower_conv2d(lw, (scale.map, scale.gate) if scale else None)
    elif lw.node.name == gate.fc2.name:
        _lower_gate(lw, gate)
    # the first conv: computed by the gate's kernel


def lower_mul(lw) -> None:
    if lw.node.name not in plan_scales(lw.plan):  # else the conv after it scales its rows
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
