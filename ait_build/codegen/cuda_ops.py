"""cuda lowering of layer_norm (+residual) and fused multi-head attention (softmax and the pools
are shared with the cpu backend: cpu_norm.py). Own templates, fp16/bf16
storage with float32 math; sizes are run-time arguments, so one kernel serves every layer of a
kind and only what changes the code (window geometry, residual, head_dim) is compiled in."""

from __future__ import annotations

from ait_build.codegen import cpu_data
from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.cpu_elementwise import float_literal
from ait_build.codegen.cpu_gemm import attention_operands
from ait_build.codegen.kernel import io_params, make_kernel
from ait_build.errors import AitError
from ait_build.ir.dims import Dim, bounds
from ait_build.ops.attention import attention_scale

# head_dim is a compile-time constant of the attention kernel; each lane of 8 holds
# ceil(head_dim / 8) of q and of the output row in registers
MAX_HEAD_DIM = 256


# a row a warp holds in registers: at most this many 16-byte chunks per lane
MAX_ROW_CHUNKS = 8


def warp_row_layout(width, dtype: str) -> dict:
    """The warp-per-row layer norm's constants when the row width is static and splits into
    16-byte vectors (8 float16/bfloat16 or 4 float32 elements) of which each lane holds at most
    MAX_ROW_CHUNKS; else chunks=0 (the block-per-row kernel only)."""
    width = Dim.of(width)
    vec = 16 // (2 if dtype in ("float16", "bfloat16") else 4)
    if not width.is_static or width.value % vec:
        return dict(chunks=0, vec=vec, width=0)
    chunks = -(-width.value // (32 * vec))
    return dict(chunks=chunks if chunks <= MAX_ROW_CHUNKS else 0, vec=vec, width=width.value)


def lower_layer_norm(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    has_res = len(node.inputs) > 1
    affine = bool(node.attrs["affine"])
    params = io_params(lw, out, "x", *(["res"] if has_res else []))
    params += [("const float*", "weight"), ("const float*", "bias")] if affine else []
    params += [("int64_t", "rows"), ("int64_t", "C"), ("float", "eps")]
    context = dict(has_residual=has_res, affine=affine, ctype=lw.ctype(out),
                   **warp_row_layout(lw.shape(x)[-1], lw.dtype(out)))
    kernel = make_kernel("layer_norm" + ("_res" if has_res else ""), node.op,
                         "cuda/layer_norm.cu.j2", context, params)
    args = [lw.dst(out), lw.src(x)] + ([lw.src(node.inputs[1])] if has_res else [])
    args += [lw.weight("weight"), lw.weight("bias")] if affine else []
    args += [cexpr(elements(lw.shape(x)[:-1])), cexpr(lw.shape(x)[-1]),
             float_literal(node.attrs["eps"])]
    lw.call(kernel, args)


FMHA_ELEMENT = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t"}
# example 41's kernel: 8-element (16-byte) aligned rows, head_dim up to its one-pass maximum;
# (queries, keys, max head_dim) per block as xFormers picks them for sm80
FMHA_ALIGN = 8
FMHA_TILES = ((64, (64, 64, 64)), (128, (32, 128, 128)))


def fmha_tiles(lw, hd: int, ld, sq, sk, bias, bias_strides):
    """The tensor-core kernel's tile (queries, keys, max head_dim) when it can take this
    attention, else None (the CUDA-core kernel of attention.cu.j2 runs it): 16-bit storage,
    head_dim a multiple of 8 up to 128, row strides and the packed head offsets multiples of 8,
    a bias in the same dtype, contiguous along keys, other strides static multiples of 8, and
    causal masks only on square scores (the kernel's bottom-right offset is unsigned)."""
    node = lw.node
    if lw.dtype(node.output) not in FMHA_ELEMENT or hd % FMHA_ALIGN:
        return None
    if not all(Dim.of(x).is_static and Dim.of(x).value % FMHA_ALIGN == 0 for x in ld):
        return None
    if node.attrs["causal"] and Dim.of(sq) != Dim.of(sk):
        return None
    if bias is not None:
        if lw.dtype(bias) != lw.dtype(node.output):
            return None
        *outer, last = (Dim.of(s) for s in bias_strides)
        if last != Dim.of(1):
            return None
        if not all(s.is_static and s.value % FMHA_ALIGN == 0 for s in outer):
            return None
    for limit, tiles in FMHA_TILES:
        if hd <= limit:
            return tiles
    return None


# example 88's Hopper FMHA (targets whose kernels.attention is fmha_sm90): per head_dim, the
# variants a kernel holds and the longest key count each takes (0: any), chosen per call. On the
# H200 (bench/hopper_fmha_variants.cu, bench/results/h200_fmha_variants.jsonl) the ping-pong
# 128x64 tile ran 128 and 197 keys 1.3-1.5x faster than the cooperative one, and the cooperative
# 128x128 tile ran 4096 keys 1.25x faster than either 128x64 (0.95 ms a BERT-base layer at batch
# 8); 1024 keys, between the measured points, is where the choice switches. No bias, no causal mask.
# (tile, schedule, up to how many keys (0: beyond), whether a twin without key masking runs key
# counts that fill whole key tiles: 4% faster on BERT's 4096 keys, bench/results/
# h200_fmha_variants.jsonl, only worth its compile time where attention takes long)
HOPPER_VARIANTS = {
    64: (("128, 64, 64", "Pingpong", 1024, 0), ("128, 128, 64", "Cooperative", 0, 1)),
    128: (("128, 128, 128", "Cooperative", 0, 1),),
}


def hopper_variants(lw, hd: int, bias) -> tuple:
    """The kernel context's Hopper variants, "tile / schedule / max_keys / whole" each (flat
    strings)."""
    node = lw.node
    if lw.plan.target.kernel("attention", "") != "fmha_sm90":
        return ()
    if bias is not None or node.attrs["causal"]:
        return ()
    return tuple(" / ".join(map(str, v)) for v in HOPPER_VARIANTS.get(hd, ()))


def lower_attention(lw) -> None:
    """softmax(scale * q k^T + bias [+ causal mask]) v per (batch, head), never materializing the
    scores: on tensor cores through CUTLASS's example-41 kernel (attention_fmha.cu.j2) when
    fmha_tiles() allows, else templates/cuda/attention.cu.j2, which streams key tiles through
    CUDA cores with an online softmax."""
    node = lw.node
    attrs = node.attrs
    heads, hd = attrs["num_heads"], attrs["head_dim"]
    if hd > MAX_HEAD_DIM:
        raise AitError(f"{node.loc}: the cuda attention kernel takes head_dim <= {MAX_HEAD_DIM}, "
                       f"'{node.name}' has {hd}")
    ops = attention_operands(lw)
    qv, kv, vv, bias, b, sq, sk = ops.q, ops.k, ops.v, ops.bias, ops.b, ops.sq, ops.sk
    ld, bias_strides = ops.ld, ops.bias_strides
    out = node.output
    params = io_params(lw, out, "q", "k", "v")
    params += [(f"const {lw.ctype(bias)}*", "bias")] if bias is not None else []
    params += [("int64_t", p) for p in ("B", "Sq", "Sk", "H", "ldq", "ldk", "ldv")]
    params += [("float", "scale")] + [("int64_t", f"bs{i}") for i in range(4)]
    context = dict(has_bias=bias is not None, causal=bool(attrs["causal"]), head_dim=hd,
                   ctype=lw.ctype(out))
    tiles = fmha_tiles(lw, hd, ld, sq, sk, bias, bias_strides)
    scratch = 0
    if tiles:  # tensor cores (CUTLASS example 41's kernel; example 88's on Hopper)
        hopper = hopper_variants(lw, hd, bias)
        context.update(element=FMHA_ELEMENT[lw.dtype(out)], queries=tiles[0], keys=tiles[1],
                       max_k=tiles[2], hopper=hopper)
        template, label = "cuda/attention_fmha.cu.j2", "fmha"
        if hopper:  # one row of log-sum-exp at the longest query count
            scratch = 4 * bounds(Dim.of(sq), lw.plan.graph.dims)[1]
    else:
        template, label = "cuda/attention.cu.j2", "attention"
    kernel = make_kernel(label + ("_causal" if attrs["causal"] else ""), node.op, template,
                         context, params)
    args = [lw.dst(out), qv, kv, vv] + ([lw.src(bias)] if bias is not None else [])
    args += [cexpr(v) for v in (b, sq, sk, heads, *ld)]
    args += [float_literal(attention_scale(attrs))] + [cexpr(s) for s in bias_strides]
    # two GEMMs per (batch, head): q k^T and p v, each 2 * Sq * Sk * head_dim
    flops = Dim.of(b) * sq * sk * (4 * heads * hd)
    lw.call(kernel, args, scratch_shared=scratch, flops=flops)


# the padded rows a thread of pad_channels.cu.j2 holds in registers: at most this many elements
PAD_ROW_ELEMENTS = 64


def lower_pad(lw) -> None:
    """A pad of the last dim alone (the image channels in front of a stem conv) writes each
    padded row once from registers; any other pad is the shared fill + strided copy."""
    node = lw.node
    x, out = node.inputs[0], node.output
    pads = [Dim.of(p) for p in node.attrs["pads"]]
    c_in, c_out = Dim.of(lw.shape(x)[-1]), Dim.of(lw.shape(out)[-1])
    last_only = all(p == 0 for p in pads[:-2]) and all(p.is_static for p in pads[-2:])
    if not (last_only and c_in.is_static and c_out.is_static and c_out.value <= PAD_ROW_ELEMENTS
            and lw.dtype(out) in ("float16", "bfloat16", "float32")):
        cpu_data.lower_pad(lw)
        return
    params = io_params(lw, out, "x") + [("int64_t", "rows"), ("float", "value")]
    kernel = make_kernel("pad_channels", node.op, "cuda/pad_channels.cu.j2",
                         dict(ctype=lw.ctype(out), c_in=c_in.value, c_out=c_out.value,
                              before=pads[-2].value), params)
    lw.call(kernel, [lw.dst(out), lw.src(x), cexpr(elements(lw.shape(x)[:-1])),
                     float_literal(node.attrs["value"])])
