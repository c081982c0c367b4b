"""cpu lowering of GEMM-shaped ops: linear, matmul/bmm, conv2d (im2col or pointwise GEMM, Winograd
for 3x3 stride-1 convs as winograd.py decides, direct depthwise) and fused attention. GEMMs go
through the target's BLAS; the epilogue act(acc + bias + residual) runs on each tile right after
it is computed (templates/cpu/_epilogue.j2). A residual that is neither the output's shape nor a
per-column vector is added by a separate elementwise pass over the output instead."""

from __future__ import annotations

from ait_build.backends.cpu import grouped, winograd
from ait_build.codegen import epilogue
from ait_build.codegen.cexpr import cexpr, collapse, contiguous_strides, elements
from ait_build.codegen.elementwise import act_fn, float_literal
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.op_geometry import (attention_operands, conv_geometry, matmul_geometry,
                                           window_attrs)
from ait_build.ir.dims import Dim
from ait_build.ops.attention import attention_scale

# scratch sizes, as ait_cpu.h's im2col_rows and attention_rows choose them at run time
IM2COL_FLOATS = 393216
ATTENTION_SCORE_FLOATS = 65536

# Convs of at most this many input channels (images: 1, 3 or 4) take the direct path where the
# vectors are AVX-512 or AVX2 (templates/cpu/_conv2d_direct.j2): im2col would gather runs of only KW*C
# floats per kernel row (21 for ResNet-50's 7x7 stem). Only while a tile's weight panel, taps x 64
# floats, stays in a 48 KiB L1 (the stem: 147 taps; ViT-B/16's 16x16 patches, 768, do not).
# 1x1 convs take it over up to DIRECT_POINTWISE_MAX_CHANNELS (MobileNetV3's 16-72, ResNet-50's
# layer-1 64), where our GEMM's packing and its epilogue pass cost more than the product, while
# the path's tiles of 6 pixels fill at least DIRECT_ROW_FILL of an output row (a 14-pixel row
# runs 18 pixels of tiles: slower than the GEMM, whose rows run across the image), except into
# more than DIRECT_RESIDUAL_MAX_OUTPUTS with a same-shaped residual (ResNet-50's 64 -> 256 + its
# shortcut: 6-9% slower direct than the GEMM, which sums onto the residual in place); the AVX-512
# copy takes such 1x1s only over up to WIDE_POINTWISE_MAX_CHANNELS into whole 16-float vectors
# (the range measured on it) and runs the GEMM for the others. Figures in docs/codegen.md,
# "conv2d: which algorithm".
DIRECT_MAX_CHANNELS = 4
DIRECT_MAX_TAPS = 192
DIRECT_POINTWISE_MAX_CHANNELS = 72
DIRECT_ROW_FILL = 0.9
DIRECT_RESIDUAL_MAX_OUTPUTS = 128
WIDE_POINTWISE_MAX_CHANNELS = 32


def row_fill(wo: int) -> float:
    """The share of the direct path's tiles of 6 output pixels that a row of `wo` fills."""
    return wo / (6 * -(-wo // 6))


def direct_conv(win: dict, groups: int, c: int, o: int, wo: int | None = None,
                 residual: bool = False) -> bool:
    """Whether a conv takes the direct path: output channels in whole 8-float vectors, no
    grouping or horizontal dilation, and either a kernel wider than 1x1 over few input channels
    and taps, or a 1x1 over up to 72 input channels whose output rows (`wo` pixels, where
    static) fill its tiles, into at most 128 outputs where a same-shaped `residual` is added."""
    taps = win["kh"] * win["kw"]
    if taps == 1:
        few = (c <= DIRECT_POINTWISE_MAX_CHANNELS and (wo is None or row_fill(wo) >= DIRECT_ROW_FILL)
               and not (residual and o > DIRECT_RESIDUAL_MAX_OUTPUTS))
    else:
        few = c <= DIRECT_MAX_CHANNELS and taps * c <= DIRECT_MAX_TAPS
    return groups == 1 and few and o % 8 == 0 and win["dw"] == 1


def wide_direct(win: dict, c: int, o: int) -> bool:
    """Whether a direct conv's AVX-512 copy takes the path too (its vectors are 16 floats), or
    falls back to the GEMM (1x1s) or im2col."""
    return o % 16 == 0 and (win["kh"] * win["kw"] > 1 or c <= WIDE_POINTWISE_MAX_CHANNELS)


def nchw_source(graph, conv) -> str | None:
    """The NCHW tensor `conv` may read itself: its input is a permute of that tensor to NHWC
    (a CNN's image, [0, 2, 3, 1]) that nothing else reads and that is no model output, and the
    conv takes the direct path, whose copy of each input row gathers the channel planes instead
    (_conv2d_direct.j2; the permute then emits nothing, layout.py). Else None."""
    if conv.op != "conv2d" or len(conv.inputs) != 1:
        return None
    x = conv.inputs[0]
    permute = graph.producers().get(x)
    if (permute is None or permute.op != "permute" or tuple(permute.attrs["dims"]) != (0, 2, 3, 1)
            or x in graph.outputs or len(graph.consumers().get(x, [])) != 1):
        return None
    c, wo = graph.tensors[x].shape[-1], graph.tensors[conv.outputs[0]].shape[2]
    win = window_attrs(conv.attrs)
    if not c.is_static or not direct_conv(win, conv.attrs["groups"], c.value,
                                          conv.attrs["out_channels"], wo.static_value):
        return None
    return permute.inputs[0]


class Epilogue(epilogue.Epilogue):
    """The node's epilogue (codegen/epilogue.py) as the cpu kernels take it: a bias, and a
    residual of the output's shape or a per-column one (`res_mode`)."""

    def __init__(self, lw, data_inputs: int, has_bias: bool):
        super().__init__(lw, data_inputs, fused_modes=("full", "row"))
        self.has_bias = has_bias

    def context(self) -> dict:
        return dict(has_bias=self.has_bias, res_mode=self.mode,
                    act=act_fn(self.kernel_act, self.attrs),
                    has_epilogue=self.has_bias or self.mode != "none" or self.kernel_act != "none")

    def params(self) -> list:
        out = [("const float*", "bias")] if self.has_bias else []
        return out + ([("const float*", "res")] if self.mode != "none" else [])

    def args(self, lw, bias_var: str | None) -> list:
        out = [bias_var] if self.has_bias else []
        return out + ([lw.src(self.residual)] if self.mode != "none" else [])


def gemm_call(lw, label, epi, out, a_var, w_var, bias_var, m, n, k, batch, a_bs, b_bs,
              trans_b=False, alpha=1.0, weight_b=False) -> None:
    """The batched GEMM template; `batch`, `a_bs`, `b_bs`: batch sizes and operand strides;
    `weight_b`: w_var is a model weight (which the kernel may multiply in packed form)."""
    out_bs = contiguous_strides(batch)
    sizes, (abs_, bbs, _) = collapse(batch, a_bs, b_bs, [s * m * n for s in out_bs])
    if len(sizes) == 1 and sizes[0] == 1:
        sizes, abs_, bbs = [], [], []
    rank = len(sizes)
    context = dict(epi.context(), trans_b=trans_b, weight_b=weight_b, batch=" * ".join(f"bn{i}" for i in range(rank)) or "1",
                   batch_dims=tuple(reversed(range(rank))))
    params = [("float*", "out"), ("const float*", "a"), ("const float*", "w")] + epi.params()
    params += [("int64_t", "M"), ("int64_t", "N"), ("int64_t", "K"), ("float", "alpha")]
    params += [("int64_t", f"{p}{i}") for p in ("bn", "as", "bs") for i in range(rank)]
    kernel = make_kernel(label, lw.node.op, "cpu/gemm.cpp.j2", context, params)
    args = [lw.dst(out), a_var, w_var] + epi.args(lw, bias_var)
    args += [cexpr(m), cexpr(n), cexpr(k), float_literal(alpha)]
    args += [cexpr(v) for v in list(sizes) + list(abs_) + list(bbs)]
    lw.call(kernel, args, flops=2 * m * n * k * elements(batch))
    epi.finish(lw, out)


def _label(op: str, epi: Epilogue) -> str:
    parts = [op] + (["bias"] if epi.has_bias else []) + (["res"] if epi.mode != "none" else [])
    return "_".join(parts + ([epi.kernel_act] if epi.kernel_act != "none" else []))


def lower_linear(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    k = lw.shape(x)[-1]
    n = Dim.of(node.attrs["out_features"])
    epi = Epilogue(lw, 1, bool(node.attrs["bias"]))
    # [K, N]: no transpose in BLAS (an `in_out` weight is stored that way already)
    in_out = node.attrs.get("weight_layout") == "in_out"
    w = lw.weight("weight", None if in_out else (lambda a: a.T), "" if in_out else "kn",
                  (k.value, n.value))
    bias = lw.weight("bias") if epi.has_bias else None
    m = elements(lw.shape(x)[:-1])
    gemm_call(lw, _label("linear", epi), epi, out, lw.src(x), w, bias, m, n, k, (), (), (),
              weight_b=True)


def lower_matmul(lw) -> None:
    node = lw.node
    g = matmul_geometry(lw)
    epi = Epilogue(lw, 2, False)
    gemm_call(lw, _label(node.op, epi), epi, node.output, lw.src(node.inputs[0]),
              lw.src(node.inputs[1]), None, g.m, g.n, g.k, g.batch, g.a_bs, g.b_bs, g.trans_b,
              node.attrs["alpha"])


def lower_conv2d(lw, scale: tuple | None = None) -> None:
    """`scale` (map, gate), for a 1x1 conv of a squeeze-excitation's product (squeeze_excite.py
    picks only 1x1 stride-1 convs): the conv reads the map and multiplies each image by the
    weights with their rows scaled by its gate [N, 1, 1, C], instead of a multiply writing the
    product out first."""
    node = lw.node
    x, out = scale[0] if scale else node.inputs[0], node.output
    (n, _, _, c, ho, wo, o), g, win, sizes, size_params = conv_geometry(lw)
    kh, kw = win["kh"], win["kw"]
    epi = Epilogue(lw, 1, bool(node.attrs["bias"]))
    bias = lw.weight("bias") if epi.has_bias else None
    cv, ov = c.value, o.value
    nchw = None if scale else nchw_source(lw.plan.graph, node)  # the image, read as it is
    common = [lw.dst(out), lw.src(nchw or x)]
    # the direct convolution's count, whatever the algorithm (Winograd's is lower): for reports
    flops = Dim.of(n) * ho * wo * (2 * ov * (cv // g) * kh * kw)
    if g == cv == ov and cv > 1:  # depthwise: a direct loop over channels
        wt = lw.weight("weight", lambda a: a.reshape(ov, kh, kw).transpose(1, 2, 0), "hwc",
                       (kh, kw, ov))
        params = [("float*", "out"), ("const float*", "x"), ("const float*", "w")] + epi.params()
        kernel = make_kernel(_label("depthwise_conv2d", epi), "conv2d",
                             "cpu/depthwise_conv2d.cpp.j2",
                             dict(epi.context(), **win, channel_vectors=True, channels=ov),
                             params + size_params)
        lw.call(kernel, common + [wt] + epi.args(lw, bias) + sizes, flops=flops)
        epi.finish(lw, out)
        return
    tile = grouped.winograd_tile(win, g, cv, ov, ho, wo)  # 3x3 stride 1: F(2x2) or F(4x4)?
    if tile:
        grouped.lower_winograd(lw, epi, _label(f"grouped_conv2d_winograd{tile}", epi), common,
                               sizes, size_params, win, (n, c, ho, wo, o), tile, flops)
        epi.finish(lw, out)
        return
    if grouped.direct_grouped(g, cv, ov):
        grouped.lower(lw, epi, _label("grouped_conv2d", epi), common, sizes, size_params, win,
                      (n, c, ho, wo, o), flops)
        epi.finish(lw, out)
        return
    tile = winograd.winograd_tile(win, g, cv, ov, ho, wo)  # 3x3 stride 1: F(2x2) or F(4x4)?
    if tile:
        winograd.lower(lw, epi, _label(f"conv2d_winograd{tile}", epi), common, sizes,
                       size_params, win, (n, c, ho, wo, o), tile, flops)
        epi.finish(lw, out)
        return
    cg, og = cv // g, ov // g
    wt = lw.weight("weight", lambda a: a.reshape(g, og, cg, kh, kw).transpose(0, 3, 4, 2, 1),
                   "ghwio", (g, kh, kw, cg, og))
    pointwise = kh == kw == 1 and win["sh"] == win["sw"] == 1 and win["ph"] == win["pw"] == 0 \
        and g == 1 and not nchw
    kg = kh * kw * cg
    chunk = min(lw.at_max(n * ho * wo), max(512, IM2COL_FLOATS // kg))  # the most rows at once
    # a squeeze-excitation's scaled 1x1 stays a GEMM (the direct path has no gate)
    direct = direct_conv(win, g, cv, ov, wo.static_value, residual=epi.mode == "full") and not scale
    # the direct path's padded input rows, per participant: a ring of the (KH - 1) * DH + 1 rows
    # one output row reads, and a row of zeros, each of its taps' width
    padded_rows = ((kh - 1) * win["dh"] + 2) * ((lw.at_max(wo) - 1) * win["sw"] + kw) * cv \
        if direct else 0
    context = dict(epi.context(), **win, groups=g, pointwise=pointwise, direct=direct,
                   nchw=bool(nchw))
    if direct:  # constants in the direct path's code; other convs share kernels across channels
        context.update(direct_c=cv, direct_o=ov, wide_direct=wide_direct(win, cv, ov))
    params = [("float*", "out"), ("const float*", "x"), ("const float*", "w")] + epi.params()
    label = "conv2d_direct" if direct else "conv2d_1x1" if pointwise else "conv2d"
    scale_args, scaled = [], 0  # the scaled weights' floats
    if scale:
        context.update(channel_scale=True)
        params.append(("const float*", "scale"))
        scale_args, label, scaled = [lw.src(scale[1])], "conv2d_1x1_scaled", cv * ov
    kernel = make_kernel(_label(label, epi), "conv2d", "cpu/conv2d.cpp.j2", context,
                         params + size_params)
    lw.call(kernel, common + [wt] + epi.args(lw, bias) + scale_args + sizes,
            scratch_shared=scaled * 4 if pointwise else chunk * kg * 4,
            scratch_thread=padded_rows * 4, flops=flops)
    epi.finish(lw, out)


def lower_attention(lw) -> None:
    node = lw.node
    attrs = node.attrs
    heads, hd = attrs["num_heads"], attrs["head_dim"]
    ops = attention_operands(lw)
    qv, kv, vv, bias, b, sq, sk = ops.q, ops.k, ops.v, ops.bias, ops.b, ops.sq, ops.sk
    ld, bias_strides = ops.ld, ops.bias_strides
    sk_max = lw.at_max(sk)  # a block of query rows holds at most this many scores
    block = min(lw.at_max(sq) * sk_max, max(32 * sk_max, ATTENTION_SCORE_FLOATS))
    context = dict(has_bias=bias is not None, causal=bool(attrs["causal"]),
                   bias_inner=bias is not None and bias_strides[3] != 0)
    if attrs.get("bias_period"):
        context.update(bias_period=attrs["bias_period"])
    params = [("float*", "out"), ("const float*", "q"), ("const float*", "k"), ("const float*", "v")]
    params += [("const float*", "bias")] if bias is not None else []
    params += [("int64_t", p) for p in ("B", "Sq", "Sk", "H", "D", "ldq", "ldk", "ldv")]
    params += [("float", "scale")] + ([("int64_t", f"bs{i}") for i in range(3)] if bias else [])
    kernel = make_kernel("attention" + ("_causal" if attrs["causal"] else ""), node.op,
                         "cpu/attention.cpp.j2", context, params)
    args = [lw.dst(node.output), qv, kv, vv] + ([lw.src(bias)] if bias is not None else [])
    args += [cexpr(v) for v in (b, sq, sk, heads, hd, *ld)]
    args += [float_literal(attention_scale(attrs))]
    args += [cexpr(s) for s in bias_strides[:3]] if bias is not None else []
    lw.call(kernel, args, scratch_thread=block * 4, flops=Dim.of(b) * sq * sk * (4 * heads * hd))
