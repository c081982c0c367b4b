"""The cuda backend's tensor-core attention: CUTLASS's fused multi-head attention (example 41's
kernel, templates/cuda/attention_fmha.cu.j2) for the calls it can take (with any bias: copied
into the layout the kernel reads where a call needs it), with the Hopper FMHA of example 88 beside it on
targets whose `kernels.attention` is fmha_sm90. Other calls run the GPU layer's kernel
(backends/gpu/attention.py)."""

from __future__ import annotations

import numpy as np

from ait_build.codegen.cexpr import contiguous_strides
from ait_build.ir.dims import Dim, bounds

# kernel family (target.kernels.attention) -> whether it offers the Hopper FMHA variants
FAMILIES = {"fmha_sm80": False, "fmha_sm90": True}
FMHA_ELEMENT = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t"}
# example 41's kernel: 8-element (16-byte) aligned rows, head_dim up to its one-pass maximum;
# (queries, keys, max head_dim) per block as xFormers picks them for sm80
FMHA_ALIGN = 8
FMHA_TILES = ((64, (64, 64, 64)), (128, (32, 128, 128)))


def fmha_tiles(lw, hd: int, ld, sq, sk):
    """The tensor-core kernel's tile (queries, keys, max head_dim) when it can take this
    attention, else None (the GPU layer's kernel runs it): 16-bit storage, head_dim a multiple
    of 8 up to 128, row strides and the packed head offsets multiples of 8, and causal masks only
    on square scores (the kernel's bottom-right offset is unsigned). Any bias goes (bias_staging)."""
    node = lw.node
    if lw.dtype(node.output) not in FMHA_ELEMENT or hd % FMHA_ALIGN:
        return None
    if not all(Dim.of(x).is_static and Dim.of(x).value % FMHA_ALIGN == 0 for x in ld):
        return None
    if node.attrs["causal"] and Dim.of(sq) != Dim.of(sk):
        return None
    for limit, tiles in FMHA_TILES:
        if hd <= limit:
            return tiles
    return None


# example 88's Hopper FMHA (targets whose kernels.attention is fmha_sm90): per head_dim, the
# variants a kernel holds and the longest key count each takes (0: any), chosen per call: the
# ping-pong 128x64 tile is the faster on short sequences, the cooperative 128x128 one on long
# ones (figures in docs/cuda.md, "Attention"). No bias; causal masks with the same tiles (not
# measured apart).
# (tile, schedule, up to how many keys (0: beyond), whether a twin without key masking runs key
# counts that fill whole key tiles: only worth its compile time where attention takes long)
HOPPER_VARIANTS = {
    64: (("128, 64, 64", "Pingpong", 1024, 0), ("128, 128, 64", "Cooperative", 0, 1)),
    128: (("128, 128, 128", "Cooperative", 0, 1),),
}


def hopper_variants(lw, hd: int, bias) -> tuple:
    """The kernel context's Hopper variants, "tile / schedule / max_keys / whole" each (flat
    strings). Causal attention (square scores, fmha_tiles) runs them with example 88's
    CausalFusion, which skips the key tiles past the diagonal and masks keys past the query in the
    diagonal ones (so also past the last key: no twin without the key mask)."""
    node = lw.node
    if not FAMILIES.get(lw.plan.target.kernel("attention", ""), False) or bias is not None:
        return ()
    variants = HOPPER_VARIANTS.get(hd, ())
    if node.attrs["causal"]:
        variants = tuple(v[:3] + (0,) for v in variants)
    return tuple(" / ".join(map(str, v)) for v in variants)


def bias_staging(lw, ops) -> int:
    """Scratch bytes for copying the bias before the kernel runs, 0 when it never needs to be.

    Example 41's kernel reads the bias with rows of 16-byte multiples and 16-byte aligned batch
    and head strides. A bias whose strides are not such multiples at plan time (a padding mask
    [batch, 1, 1, seq] over a dim `seq`, or over 13 keys) is copied, in calls whose strides are
    not, into scratch as [batch, heads, queries, keys rounded up to 8]: a broadcast axis kept at
    size 1 with stride 0, the padded keys 0 (the kernel never reads past the keys)."""
    if ops.bias is None:
        return 0
    strides = [Dim.of(s) for s in ops.bias_strides]
    if strides[3] == Dim.of(1) and all(s.is_static and s.value % FMHA_ALIGN == 0 for s in strides[:3]):
        return 0
    ranges = lw.plan.graph.dims
    rows = 1
    batch = lw.node.attrs.get("bias_period") or ops.b  # a periodic bias holds `period` batches
    for size, stride in zip((batch, ops.sq), (strides[0], strides[2])):
        rows *= bounds(Dim.of(size), ranges)[1] if stride != Dim.of(0) else 1
    heads = lw.node.attrs["num_heads"] if strides[1] != Dim.of(0) else 1
    keys = -(-bounds(Dim.of(ops.sk), ranges)[1] // FMHA_ALIGN) * FMHA_ALIGN
    return rows * heads * keys * 2 + 16


def weight_bias(lw, ops):
    """(pointer, strides) of a bias that is a weight (Swin's relative position bias and window
    mask), copied once when the weights are written with its keys padded to a multiple of 8, so
    no call copies it; None for a bias computed at run time."""
    graph = lw.plan.graph
    producer = next((n for n in graph.nodes if ops.bias in n.outputs), None)
    shape = lw.shape(ops.bias)
    if producer is None or producer.op != "parameter" or shape[-1] != Dim.of(ops.sk):
        return None
    source, dims = producer.weights["value"], [d.value for d in shape]
    keys = -(-dims[-1] // FMHA_ALIGN) * FMHA_ALIGN
    padded = tuple(dims[:-1]) + (keys,)

    def make(store):
        value = store.get(source).reshape(dims)
        return np.pad(value, [(0, 0)] * (len(dims) - 1) + [(0, keys - dims[-1])])
    dtype = lw.dtype(ops.bias)
    var = lw.plan.add_weight(f"{source}@keys{keys}.{dtype}", make, padded, dtype)
    steps = contiguous_strides(padded)
    strides = [0] * (4 - len(dims)) + [0 if d == 1 else s for d, s in zip(dims, steps)]
    return var, strides[:3] + [1]


def tensor_core_attention(lw, ops, context: dict):
    """(template, label, scratch bytes, bias) of the tensor-core kernel for the call (attention.py
    says what `bias` is), its context added, or None where fmha_tiles() refuses it."""
    hd = context["head_dim"]
    tiles = fmha_tiles(lw, hd, ops.ld, ops.sq, ops.sk)
    if not tiles:
        return None
    hopper = hopper_variants(lw, hd, ops.bias)
    staging = bias_staging(lw, ops)
    laid_out = weight_bias(lw, ops) if staging else None
    context.update(element=FMHA_ELEMENT[lw.dtype(lw.node.output)], queries=tiles[0],
                   keys=tiles[1], max_k=tiles[2], hopper=hopper)
    if staging and laid_out is None:
        context.update(stage_bias=True)
    else:
        staging = 0
    # the Hopper variants keep one row of log-sum-exp at the longest query count (they take no
    # bias, so never both)
    scratch = 4 * bounds(Dim.of(ops.sq), lw.plan.graph.dims)[1] if hopper else staging
    return "cuda/attention_fmha.cu.j2", "fmha", scratch, laid_out
