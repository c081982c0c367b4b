"""Grouped convs on the cpu backend (ResNeXt's and RegNet's 3x3s, ShuffleNet-style group
widths): a direct conv over 16-channel output vectors (templates/cpu/grouped_conv2d.cpp.j2)
instead of one im2col and thin GEMM per group.

An output vector (16 output channels) reads the input channels of the groups it overlaps: CG of
them when a group's outputs are whole vectors (RegNetX's 48, ResNeXt's 8-32 at its later
stages), 16 / OG groups' worth when groups are narrower (RegNetY's 8: two groups, 16 input
channels, half of the weights zero). The weights are packed at build time per block of VB
vectors as [blocks][KH][KW][CIN][VB * 16], zero where an output channel's group does not read
that input channel, so the kernel's inner loop is a dense one: each input value is broadcast
and multiplied into VB vectors of sums. 3x3 stride-1 convs over groups of whole vectors run
Winograd F(2x2) or F(4x4) instead (`winograd_tile`, `lower_winograd`,
templates/cpu/grouped_conv2d_winograd.cpp.j2): the same packing and register tile, the
transformed positions taking the place of the window's taps.
"""

from __future__ import annotations

import numpy as np

from ait_build.backends.cpu import winograd
from ait_build.codegen.kernel import make_kernel

LANES = 16  # output channels per vector (an AVX-512 register; an AVX2 copy runs it as two)
# the fewest input channels a block reads for Winograd to take a grouped conv: below, the tile
# products' short sums leave the transforms most of the work
MIN_WINOGRAD_INPUTS = 16
# the most floats of a Winograd slice's transformed inputs and products (512 KiB), which stay
# in a core's L2 beside the block's transformed weights
SLICE_FLOATS = 131072


def vector_inputs(groups: int, c: int, o: int) -> list:
    """The first input channel each output vector reads, and how many (the same for all: the
    most any vector needs, kept inside the tensor)."""
    cg, og = c // groups, o // groups
    spans = []
    for v in range(-(-o // LANES)):
        first, last = LANES * v // og, min(o - 1, LANES * v + LANES - 1) // og
        spans.append((first * cg, (last - first + 1) * cg))
    cin = max(n for _, n in spans)
    return [min(start, c - cin) for start, _ in spans], cin


def block_vectors(groups: int, o: int) -> int:
    """Vectors a tile keeps together: those of one group, which share their input channels
    (at most 4, 24 sums in registers with 6-8 pixels)."""
    og = o // groups
    if og % LANES:
        return 1
    return next(vb for vb in (4, 3, 2, 1) if (og // LANES) % vb == 0)


def pack(weight: np.ndarray, groups: int, vb: int) -> np.ndarray:
    """[O, CG, KH, KW] (PyTorch's layout) -> [blocks][KH][KW][CIN][VB * 16], zero-padded."""
    o, cg, kh, kw = weight.shape
    c = cg * groups
    starts, cin = vector_inputs(groups, c, o)
    vectors = len(starts)
    out = np.zeros((vectors, kh, kw, cin, LANES), dtype=np.float32)
    og = o // groups
    for oc in range(o):
        v, lane = divmod(oc, LANES)
        first = oc // og * cg  # the group's first input channel
        k0 = first - starts[v]
        out[v, :, :, k0:k0 + cg, lane] = weight[oc].transpose(1, 2, 0)
    blocks = out.reshape(vectors // vb, vb, kh, kw, cin, LANES).transpose(0, 2, 3, 4, 1, 5)
    return np.ascontiguousarray(blocks.reshape(vectors // vb, kh, kw, cin, vb * LANES))


def half_inputs(groups: int, c: int, o: int) -> int:
    """CG where each half (8 output channels) of every vector is one group reading its inputs at
    k offset half * CG (the other half of its packed weights zeros), which an AVX2 copy can skip;
    else 0. Not where a vector's first input was moved back to stay inside the tensor (the last
    vector of a width that is not a multiple of 16)."""
    cg, og = c // groups, o // groups
    starts, cin = vector_inputs(groups, c, o)
    unmoved = all(start == LANES * v // og * cg for v, start in enumerate(starts))
    return cg if og == 8 and cin == 2 * cg and unmoved else 0


def direct_grouped(groups: int, c: int, o: int) -> bool:
    """Grouped convs that are not depthwise take the direct kernel."""
    return groups > 1 and not groups == c == o


def winograd_tile(win: dict, groups: int, c: int, o: int, ho, wo) -> int:
    """F(m x m, 3 x 3) for a grouped conv the direct kernel would take (its tile products summed
    over a block's CIN inputs by the same register tile), or 0 for the direct kernel: 3x3
    stride-1 windows as the dense rule (winograd.tile_for), groups of whole vectors of outputs
    (narrower ones multiply zeros for half of every product, and the transforms of twice the
    inputs then cost more than the multiplies saved: ResNeXt-101's 8-wide 56x56 convs 20%
    slower) and at least MIN_WINOGRAD_INPUTS inputs a block."""
    if not direct_grouped(groups, c, o) or (o // groups) % LANES \
            or vector_inputs(groups, c, o)[1] < MIN_WINOGRAD_INPUTS:
        return 0
    return winograd.tile_for(win, ho, wo)


def lower(lw, epi, label, common, sizes, size_params, win, dims, flops) -> None:
    node = lw.node
    n, c, ho, wo, o = dims
    g = node.attrs["groups"]
    kh, kw = win["kh"], win["kw"]
    cv, ov = c.value, o.value
    starts, cin = vector_inputs(g, cv, ov)
    vb = block_vectors(g, ov)
    blocks = len(starts) // vb
    wt = lw.weight("weight", lambda a: pack(a, g, vb), "grouped",
                   (blocks, kh, kw, cin, vb * LANES))
    bias = lw.weight("bias") if epi.has_bias else None
    half_cin = half_inputs(g, cv, ov)
    context = dict(epi.context(), **win, groups=g, cin=cin, vb=vb, half_cin=half_cin,
                   channel_vectors=True)
    params = [("float*", "out"), ("const float*", "x"), ("const float*", "w")] + epi.params()
    kernel = make_kernel(label, "conv2d", "cpu/grouped_conv2d.cpp.j2", context,
                         params + size_params)
    # each participant's zero-padded input rows: a ring of the (KH - 1) * DH + 1 rows an output
    # row reads, and a row of zeros
    padded = ((kh - 1) * win["dh"] + 2) * ((lw.at_max(wo) - 1) * win["sw"] + (kw - 1) * win["dw"]
                                            + 1) * cv
    lw.call(kernel, common + [wt] + epi.args(lw, bias) + sizes, scratch_thread=padded * 4,
            flops=flops)


def lower_winograd(lw, epi, label, common, sizes, size_params, win, dims, tile, flops) -> None:
    """The call of F(tile x tile, 3 x 3) for a grouped conv `winograd_tile` chose it for
    (templates/cpu/grouped_conv2d_winograd.cpp.j2); arguments as `lower`'s."""
    _, c, _, _, o = dims
    g = lw.node.attrs["groups"]
    cv, ov = c.value, o.value
    starts, cin = vector_inputs(g, cv, ov)
    vb = block_vectors(g, ov)
    alpha = tile + 2

    def transform(a):  # [O, CG, 3, 3] -> U [P][CG][O] -> packed as a window of alpha x alpha taps
        u = winograd.transform_weights(a, tile)
        return pack(u.transpose(2, 1, 0).reshape(ov, cv // g, alpha, alpha), g, vb)

    wt = lw.weight("weight", transform, f"grouped_winograd{tile}",
                   (len(starts) // vb, alpha, alpha, cin, vb * LANES))
    bias = lw.weight("bias") if epi.has_bias else None
    positions, bw = alpha * alpha, vb * LANES
    slice_tiles = max(8, SLICE_FLOATS // (positions * (cin + bw)))
    context = dict(epi.context(), **winograd.transform_code(tile), tile=tile, ph=win["ph"],
                   pw=win["pw"], slice_tiles=slice_tiles, groups=g, cin=cin, vb=vb,
                   half_cin=half_inputs(g, cv, ov), channel_vectors=True)
    params = [("float*", "out"), ("const float*", "x"), ("const float*", "w")] + epi.params()
    kernel = make_kernel(label, "conv2d", "cpu/grouped_conv2d_winograd.cpp.j2", context,
                         params + size_params)
    # one participant's slice: its transformed inputs and products, a row of zeros (the
    # padding's taps) and a row the output transform writes the tiles' clipped pixels to
    lw.call(kernel, common + [wt] + epi.args(lw, bias) + sizes,
            scratch_thread=(positions * slice_tiles * (cin + bw) + cv + ov) * 4, flops=flops)
