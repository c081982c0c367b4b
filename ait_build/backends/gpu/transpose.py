"""GPU lowering of permutes that swap the two innermost (merged) axes where both are at least a
tile's edge: ShuffleNet's layout changes around its channel split (58-232 channels x 49-784
pixels, both ways). The shared strided copy (codegen/data_movement.py) writes the output's
innermost axis contiguously but reads each element far from the last, a 32-byte sector for two
bytes; templates/gpu/transpose.cu.j2 reads and writes 32 x 32 tiles through shared memory, both
sides contiguous. A swap with a short side (a CNN's 3-channel NCHW image to NHWC, or back) takes
templates/gpu/short_transpose.cu.j2 instead: a thread moves 16 bytes along the long side of each
short row, as vector accesses on both sides (the copy moved one element a thread: 0.79 TB/s on
EfficientNetV2-S's 384x384 image at batch 128). The sizes that choose must be static."""

from __future__ import annotations

from ait_build.codegen import data_movement, strided_copy
from ait_build.ir.dims import Dim

TILE = 32  # the tile's edge: one warp's width along each side
SHORT = 16  # a side of at most this many elements is short: its rows fit one thread's registers


def tiled(lw, swap: tuple, src: str) -> bool:
    """Runs a transpose kernel for `swap` reading `src`: the tiled one where both swapped sides
    are long enough, the short-side one where one is short and static; False (nothing emitted)
    where neither fits."""
    a, b = (Dim.of(d) for d in swap[0][-2:])
    if all(d.is_static and d.value >= TILE // 2 for d in (a, b)):
        data_movement.call_transpose(lw, swap, lw.template("transpose"), src, tile=TILE)
        return True
    for short, short_out in ((b, True), (a, False)):
        if short.is_static and 1 < short.value <= SHORT:
            data_movement.call_transpose(lw, swap, lw.template("short_transpose"), src,
                                         "short_transpose", short=short.value,
                                         short_out=short_out)
            return True
    return False


def lower_permute(lw) -> None:
    swap = data_movement.inner_transpose(lw)
    if swap is None or not tiled(lw, swap, lw.src(lw.node.inputs[0])):
        data_movement.lower_permute(lw)


def lower_strided_copy(lw) -> None:
    """A fused chain of data movement (codegen/strided_copy.py), tiled where it transposes."""
    strided_copy.lower_strided_copy(lw, tiled)
