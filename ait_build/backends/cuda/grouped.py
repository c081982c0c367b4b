"""Grouped convolutions on tensor cores (ResNeXt, RegNet: 2 channels per group and up).

CUTLASS's grouped implicit-GEMM convs give every block whole output-channel tiles of one group
(kSingleGroup: a group of 8 or 16 channels wastes most of a 64-wide tile) or multiply the zeros
between groups (kMultipleGroup), and they take no broadcast epilogue. Our own kernel
(templates/cuda/conv2d_grouped.cu.j2) issues only the block-diagonal products: a block copies the
input halo of a spatial tile and the filters of a few consecutive groups into shared memory once
and runs mma.sync over them, with the dense convs' epilogue act(acc + bias + residual). Each
call is a tunable (codegen/tuning.py): its configurations (rows per block, groups per block) are
all in one small kernel source, and `ait-build profile` measures them like CUTLASS's.

Narrower groups (ResNeXt-50's 4 channels) run as groups of 8: `merge` neighbouring groups are
one group of the kernel, their filters padded with zeros across the groups they do not read
(twice the tensor-core work of 4-channel groups, which is still far below the bytes' time; the
direct kernel spent a CUDA-core FMA per multiply-add). Wider groups whose filters do not fit a
block's shared memory (RegNetX-8GF's 120 -> 120, RegNetY-32GF's 232) are `split` into blocks of
fewer outputs (3 of 40, 29 of 8), each staging its group's whole input halo. Depthwise convs
(one channel per group) and widths that do not reach whole vectors by merging at most MAX_MERGE
groups keep the GPU layer's direct kernel; float32 models too (their tensor-core math is 3xTF32,
which this kernel does not do).
"""

from __future__ import annotations

from functools import partial

from ait_build.backends.gpu import gemm
from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.op_geometry import conv_geometry, conv_kernel_params
from ait_build.codegen.tuning import Config, Tunable
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import HALF_DTYPES

CHANNEL_VECTOR = 8  # channels per 16-byte vector: the kernel moves whole vectors
MAX_GROUP_WIDTH = 128  # output channels per group: one group's accumulators per warp row tile
# a block's filters stay in shared memory for the whole call (with the halo and the staged
# output, within the 227 KiB of a Hopper block or the 163 KiB of an A100 one)
MAX_FILTER_BYTES = 96 << 10
# (row tiles of 16 pixels per warp, output channels per block); accumulators per thread are
# rows / 32 * channels / 2 (at most 128)
MAX_MERGE = 4  # groups merged into one: at most 4x the multiplies (a group of 2 channels)
SHAPES = ((2, 64), (1, 64), (4, 64), (2, 128), (1, 128))
LADDER = 2  # the first two: 128 or 64 pixels per block, 64 channels


def config(rows_per_warp: int, groups: int, og: int) -> Config:
    rows, cols = 4 * 16 * rows_per_warp, groups * og
    return Config(f"grouped_{rows}x{cols}", "grouped", (("gpc", groups), ("mt", rows_per_warp)),
                  (rows, cols))


def candidates(og: int, split: int = 1) -> tuple:
    """(candidates, ladder): for each shape, as many whole groups as fit its channels (at least
    one; exactly one part of a split group), the duplicates of narrow shapes on wide groups
    dropped."""
    seen = {}
    for mt, cols in SHAPES:
        c = config(mt, 1 if split > 1 else max(1, cols // og), og)
        if c.tile[1] * mt <= 256:  # accumulators: 2 * mt * cols / 8 per thread
            seen.setdefault(c.name, c)
    found = tuple(seen.values())
    return found, found[:LADDER]


def merge(groups: int, cg: int, og: int) -> int:
    """How many neighbouring groups run as one group of the kernel: the fewest (dividing the
    groups) whose channels are whole 16-byte vectors; 0 where none up to MAX_MERGE is."""
    for m in range(1, MAX_MERGE + 1):
        if groups % m == 0 and (cg * m) % CHANNEL_VECTOR == 0 and (og * m) % CHANNEL_VECTOR == 0:
            return m
    return 0


def split(cg: int, og: int, taps: int) -> int:
    """Into how many blocks of outputs one group's filters go so that a block's fit in shared
    memory and its accumulators in registers: the fewest (dividing og into whole vectors); 0
    where none does."""
    for s in range(1, og // CHANNEL_VECTOR + 1):
        part = og // s
        if og % s == 0 and part % CHANNEL_VECTOR == 0 and part <= MAX_GROUP_WIDTH \
                and part * taps * cg * 2 <= MAX_FILTER_BYTES:
            return s
    return 0


def takes(dtype: str, groups: int, cv: int, ov: int, win: dict) -> tuple:
    """(merge, split) where the tensor-core kernel runs this conv (16-bit, not depthwise, whole
    channel vectors per merged group, each block's filters within shared memory): how many
    groups it merges into one and into how many blocks of outputs it splits one; () where it
    does not run it."""
    if dtype not in HALF_DTYPES or groups == 1 or cv % groups or ov % groups or groups == cv == ov:
        return ()
    m = merge(groups, cv // groups, ov // groups)
    if not m:
        return ()
    s = split(cv // groups * m, ov // groups * m, win["kh"] * win["kw"])
    return (m, s) if s else ()


def merged_filters(a, groups: int, m: int):
    """OIHW grouped filters [O][C/G][KH][KW] as KRSC filters of groups of m: [O][KH][KW][m*C/G],
    each output channel's own group's filter at its place among the m, zeros at the others."""
    import numpy as np

    o, cg, kh, kw = a.shape
    krsc = np.asarray(a).transpose(0, 2, 3, 1)
    if m == 1:
        return krsc
    out = np.zeros((o, kh, kw, m, cg), dtype=krsc.dtype)
    place = (np.arange(o) // (o // groups)) % m  # each output's group among its merged ones
    for j in range(m):
        out[place == j, :, :, j, :] = krsc[place == j]
    return out.reshape(o, kh, kw, m * cg)


def lower_conv2d(engine, lw) -> None:
    """The cuda backend's conv2d lowering: grouped convs the tensor-core kernel takes run it; the
    rest is the GPU layer's (backends/gpu/gemm.py)."""
    node = lw.node
    dims, groups, win, sizes, size_params = conv_geometry(lw)
    n, h, w, c, ho, wo, o = dims
    dtype = lw.dtype(node.output)
    how = all(Dim.of(d).is_static for d in (c, o)) and takes(dtype, groups, c.value, o.value, win)
    if not how:
        gemm.lower_conv2d(engine, lw)
        return
    m, parts = how
    flops = n * ho * wo * o * (c.value // groups * win["kh"] * win["kw"] * 2)  # the conv's own
    groups //= m
    cg, og = c.value // groups, o.value // groups // parts
    kh, kw = win["kh"], win["kw"]
    out, ctype = node.output, lw.ctype(node.output)
    epi = gemm.Epilogue(lw, 1, bool(node.attrs["bias"]))
    # KRSC per output channel: [O][KH][KW][C/G], each group's filters contiguous
    wt = lw.weight("weight", partial(merged_filters, groups=groups * m, m=m),
                   "krsc" if m == 1 else f"krsc_merged{m}", (o.value, kh, kw, cg), dtype=dtype)
    params = conv_kernel_params(ctype, ctype, size_params)
    params += [("int", "G")] + [("int", p) for p in gemm.WINDOW]
    window = [win[p.lower()] for p in gemm.WINDOW]
    # the kernel's groups are the blocks of outputs: `parts` per group of inputs
    args = [lw.dst(out), lw.src(node.inputs[0]), wt] + epi.args(lw) + sizes + [str(groups * parts)]
    args += [str(v) for v in window]
    context = dict(ctype=ctype, cg=cg, og=og, split=parts, act_fn=epi.fn,
                   **{k: win[k] for k in ("kh", "kw", "sh", "sw", "dh", "dw")})
    label = gemm.label_of("conv2d_grouped", epi)
    template = lw.template("conv2d_grouped")

    def make(configs, ladder):
        shapes = [dict(c.context) for c in configs]
        return make_kernel(label, "conv2d", template, dict(
            context, configs=tuple(f"{s['mt']}, {s['gpc']}" for s in shapes),
            groups_per_block=tuple(s["gpc"] for s in shapes), ladder=tuple(ladder)),
            params + [("int", "config")])
    found, ladder = candidates(og, parts)
    scalars = list(zip(("N", "H", "W", "C", "HO", "WO", "O"), dims)) + [("G", groups * parts)]
    scalars += list(zip(gemm.WINDOW, window))
    problem = tuple((k.lower(), gemm._static(v)) for k, v in scalars if k not in ("N", "G"))
    family = (f"conv2d_grouped {dtype} act={epi.act_text} cg={cg} og={og} k={kh}x{kw} "
              f"s={win['sh']}x{win['sw']} d={win['dh']}x{win['dw']}"
              + (f" split={parts}" if parts > 1 else ""))
    # kind 'conv2d': the profiling driver's conv buffers (its filter buffer, O*KH*KW*C elements,
    # holds the grouped filters' O*KH*KW*C/G)
    tunable = Tunable(kind="conv2d", family=family, problem=problem, extent=Dim.of(n),
                      scalars=tuple(scalars),
                      operands=(("bias", epi.bias is not None), ("res", epi.residual is not None)),
                      candidates=found, ladder=ladder)
    group = make(ladder, tuple(range(len(ladder)))).name
    lw.tuned_call(tunable, make, args, group, flops=flops)
    epi.finish(lw, out)


def lowering(engine):
    return partial(lower_conv2d, engine)
