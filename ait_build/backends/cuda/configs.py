"""The CUTLASS configurations a cuda GEMM or conv kernel can hold, as data.

Each configuration has a name (what profiles/<target>.yaml and logs say), a kind (`sm80`:
CUTLASS 2.x, mma.sync; `sm90`: CUTLASS 3.x, TMA and wgmma) that picks its template, and the
context that template adds. Each is compiled in a translation unit of its own
(backends/gpu/gemm.py). `gemm_candidates` and `conv_candidates` list what a call may run, by
element type, operand alignment and the target's kernel family; their first entries form the
heuristic's ladder (what a call without a profile entry or an estimate runs, estimate.py, and
what a configuration its pointers cannot take falls back to): the largest tile whose tiles
still cover every multiprocessor, else a small one.

Why these: the sm80 tiles span the shapes CUTLASS's own profiler sweeps for f16 tensor ops;
the sm90 ones cover Hopper's schedules (cooperative 128-row tiles; ping-pong 64-row ones that
overlap one tile's epilogue with the next one's mainloop), clusters of two along the longer
side, and stream-K for the GEMMs whose tiles cannot fill the 132 multiprocessors at batch 1
(docs/cuda.md).
"""

from __future__ import annotations

from ait_build.codegen.tuning import Config, gemm_rows


def _x(shape) -> str:
    return "x".join(map(str, shape))


def _c(shape) -> str:
    return ", ".join(map(str, shape))


def sm80(block, warp, stages: int, iterator: str = "") -> Config:
    """A CUTLASS 2.x tensor-op configuration (GEMM and conv alike); a conv's `iterator` other
    than the default kOptimized (kFixedChannels: activations read as whole C-channel vectors,
    for convs over a few channels such as a stem over 8 padded image channels)."""
    context = (("block", _c(block)), ("stages", stages), ("warp", _c(warp)))
    suffix = ""
    if iterator:
        context += (("iterator", iterator),)
        suffix = "_" + {"kFixedChannels": "fixed"}[iterator]
    return Config(f"sm80_{_x(block)}_w{_x(warp)}_s{stages}{suffix}", "sm80", context, tuple(block[:2]))


# stream-K's scratch bound counts partial tiles per multiprocessor; no lent GPU has more
SM_COUNT_BOUND = 160
# TMA reads rows and bases of 16 bytes: 8 elements of 16 bits
SM90_ALIGN = 8
SM90_BASE = 16


def _streamk_workspace(tile):
    """Upper bound of stream-K's scratch at an extent: one float32 tile of partial sums per
    output tile or per two multiprocessors' worth, whichever is more, and a barrier word per tile
    (CUTLASS's get_workspace_size is the exact figure; a call needing more than this bound
    falls back to a configuration without scratch)."""
    def bound(tunable, extent: int) -> int:
        problem = dict(tunable.problem)
        rows, batches = gemm_rows(problem, extent)
        tiles = -(-rows // tile[0]) * -(-problem["n"] // tile[1]) * batches
        return max(tiles, 2 * SM_COUNT_BOUND) * tile[0] * tile[1] * 4 + tiles * 64 + 4096
    return bound


def sm90_gemm(schedule: str, tile, cluster, streamk: bool = False) -> Config:
    """A CUTLASS 3.x Hopper GEMM: schedule 'cooperative' or 'pingpong', the persistent tile
    scheduler or stream-K (CUTLASS's heuristic decomposition, split-K included)."""
    short = {"cooperative": "coop", "pingpong": "pingpong"}[schedule]
    context = (("cluster", _c((*cluster, 1))), ("schedule", schedule),
               ("splits", 0 if streamk else -1), ("tile", _c(tile)))
    return Config(f"sm90_{short}_{_x(tile)}_c{_x(cluster)}{'_streamk' if streamk else ''}", "sm90",
                  context, tuple(tile[:2]), SM90_BASE, _streamk_workspace(tile) if streamk else None)


def sm90_conv(tile, cluster, estimated: bool = True) -> Config:
    """A CUTLASS 3.x Hopper implicit-GEMM conv (non-persistent: CUTLASS 4.2 has no other)."""
    return Config(f"sm90_conv_{_x(tile)}_c{_x(cluster)}", "sm90",
                  (("cluster", _c((*cluster, 1))), ("tile", _c(tile))), tuple(tile[:2]), SM90_BASE,
                  estimated=estimated)


# float32 models: 3xTF32, one configuration (its math is the point, not its speed)
SM80_FLOAT32 = sm80((64, 64, 16), (32, 32, 16), 4)
SM80_LARGE = sm80((128, 128, 32), (64, 64, 32), 3)
SM80_SMALL = sm80((64, 64, 32), (32, 32, 32), 4)
SM80_MORE = (
    sm80((128, 128, 64), (64, 64, 64), 3),
    sm80((128, 256, 32), (64, 64, 32), 3),
    sm80((256, 128, 32), (64, 64, 32), 3),
    sm80((128, 64, 32), (64, 32, 32), 4),
    sm80((64, 128, 32), (32, 64, 32), 4),
)
# the fastest tile on large problems (docs/cuda.md, "Hopper GEMMs"): the heuristic's first choice
SM90_LARGE = sm90_gemm("cooperative", (128, 256, 64), (2, 1))
SM90_MORE = (
    sm90_gemm("cooperative", (128, 128, 64), (1, 1)),
    sm90_gemm("cooperative", (256, 128, 64), (1, 2)),
    sm90_gemm("pingpong", (128, 128, 64), (1, 1)),
    sm90_gemm("pingpong", (64, 128, 64), (1, 1)),
    sm90_gemm("pingpong", (64, 64, 64), (1, 1)),
    sm90_gemm("cooperative", (128, 128, 64), (1, 1), streamk=True),
    sm90_gemm("cooperative", (128, 64, 64), (1, 1), streamk=True),
    sm90_gemm("cooperative", (128, 256, 64), (1, 1), streamk=True),
)
# (a 128x256 tile was offered too: no profiled problem chose it, and where the estimate did,
# FCN-ResNet50's 3x3 convs at batch 32, it ran at 40-51 TFLOP/s against 330 for 128x128 tiles
# on the same model, docs/cuda.md)
SM90_CONVS = (
    sm90_conv((128, 128, 64), (1, 1)),
    sm90_conv((128, 64, 64), (1, 1)),
    sm90_conv((128, 128, 64), (2, 1)),
    # 64-row tiles (one consumer warp group): twice the blocks of the 128-row ones, for convs
    # whose tiles are too few to fill the GPU (ResNet-50's 3x3 convs at batch 1 are 8-14 blocks
    # of 128 x 64 for 132 multiprocessors); not ranked by the estimate: only a profile picks them
    sm90_conv((64, 128, 64), (1, 1), estimated=False),
    sm90_conv((64, 64, 64), (1, 1), estimated=False),
    sm90_conv((64, 32, 64), (1, 1), estimated=False),
)
# convs over at most 8 channels whose alignment is the channel count (CUTLASS's
# kFixedChannels iterator), for the profile to measure against kOptimized on a slow stem
# (docs/cuda.md, "Hopper convs")
FIXED_CHANNELS = (
    sm80((128, 64, 64), (64, 32, 64), 3, "kFixedChannels"),
    sm80((128, 128, 64), (64, 64, 64), 3, "kFixedChannels"),
    sm80((64, 64, 64), (32, 32, 64), 4, "kFixedChannels"),
)
# the sm90 conv's im2col loads take whole 64-channel K tiles: fewer input channels (a stem conv
# over 8 padded image channels) ran 1 ms a call or trapped on the H200 (docs/cuda.md)
SM90_CONV_CHANNELS = 64


# GEMMs over few channels (the 1x1 convs of mobile CNNs: N or K of 16 to 320, M = batch x pixels,
# millions of rows): tiles 32 columns wide waste less of a 16-96 column problem than the 64- and
# 128-wide ones, and with a short K loop more, smaller blocks keep more loads in flight
NARROW_CHANNELS = 320
SM80_NARROW = (
    sm80((128, 32, 64), (32, 32, 64), 4),
    sm80((256, 32, 32), (64, 32, 32), 4),
    sm80((64, 64, 64), (32, 32, 64), 5),
)
# convs over at most 48 channels on a side (EfficientNet's 24 and 48): 32-column tiles with
# 32-deep steps
# (a step is one filter tap's channels: 64-deep steps waste more than half of 24), and a
# 64-row tile that halves a block's registers and shared memory so more blocks share a
# multiprocessor
CONV_NARROW_CHANNELS = 48
SM80_CONV_NARROW = (
    sm80((64, 32, 32), (32, 32, 32), 4),
    sm80((128, 32, 32), (32, 32, 32), 4),
    SM80_NARROW[1],
)
SM90_NARROW = (
    sm90_gemm("pingpong", (64, 32, 64), (1, 1)),
    sm90_gemm("cooperative", (128, 32, 64), (1, 1)),
    sm90_gemm("cooperative", (256, 64, 64), (1, 1)),
)


def gemm_candidates(dtype: str, hopper: bool, min_align: int, channels: int = 0) -> tuple:
    """(candidates, ladder) of a GEMM of `dtype` whose operands allow `min_align`-element
    accesses, on a target whose GEMM family is Hopper's (`hopper`) or not; `channels`, the
    smaller of N and K when both are static (else 0), adds the narrow tiles for few channels."""
    if dtype == "float32":
        return (SM80_FLOAT32,), (SM80_FLOAT32,)
    ladder = (SM80_LARGE, SM80_SMALL)
    more = SM80_MORE
    narrow = 0 < channels <= NARROW_CHANNELS
    if narrow:
        more = more + SM80_NARROW
    if hopper and min_align >= SM90_ALIGN:
        ladder = (SM90_LARGE,) + ladder
        more = more + SM90_MORE + (SM90_NARROW if narrow else ())
    return ladder + more, ladder


def conv_candidates(dtype: str, hopper: bool, min_align: int, channels: int,
                    out_channels: int = 0) -> tuple:
    """(candidates, ladder) of an implicit-GEMM conv over `channels` input and `out_channels`
    output channels; the sm90 convs are offered on Hopper targets for 64-channel multiples but
    never in the ladder (slower than sm80 on ResNet-50 as a default, docs/cuda.md): a profile or
    the estimate picks them. Few channels (either side) add the narrow tiles."""
    if dtype == "float32":
        return (SM80_FLOAT32,), (SM80_FLOAT32,)
    ladder = (SM80_LARGE, SM80_SMALL)
    more = SM80_MORE
    if hopper and min_align >= SM90_ALIGN and channels % SM90_CONV_CHANNELS == 0:
        more = more + SM90_CONVS
    if channels == min_align and channels <= 8:
        more = more + FIXED_CHANNELS
    if 0 < min(channels, out_channels or channels) <= CONV_NARROW_CHANNELS:
        more = more + SM80_CONV_NARROW
    return ladder + more, ladder


def family_candidates(family: str, problem: dict, hopper: bool) -> tuple:
    """(candidates, ladder) a build offers a call of a profile `family` (its readable identity,
    e.g. 'gemm float16 b=col act=relu align=8,8,8') and `problem` (the static sizes: n and k, or
    a conv's c and o), as backends/gpu/gemm.py asks for them: what a profile entry or a journal
    line was chosen among."""
    op, dtype = family.split()[:2]
    align = min(int(a) for a in family.split("align=")[1].split()[0].split(","))
    if op == "gemm":
        return gemm_candidates(dtype, hopper, align, min(problem["n"], problem["k"]))
    return conv_candidates(dtype, hopper, align, problem["c"], problem["o"])
