"""GPU lowering of permutes that swap the two innermost (merged) axes where both are at least a
tile's edge: ShuffleNet's layout changes around its channel split (58-232 channels x 49-784
pixels, both ways). The shared strided copy (codegen/data_movement.py) writes the output's
innermost axis contiguously but reads each element far from the last, a 32-byte sector for two
bytes; templates/gpu/transpose.cu.j2 reads and writes 32 x 32 tiles through shared memory, both
sides contiguous. A swap with a short side (a CNN's 3-channel image) keeps the copy, whose reads
then come in a few contiguous streams. Sizes of the swapped axes must be static to choose."""

from __future__ import annotations

from ait_build.codegen import data_movement, strided_copy
from ait_build.ir.dims import Dim

TILE = 32  # the tile's edge: one warp's width along each side


def tiled(lw, swap: tuple, src: str) -> bool:
    """Runs the tiled kernel for `swap` reading `src`, where both swapped sides are long enough;
    False (nothing emitted) where not."""
    sides = [Dim.of(d) for d in swap[0][-2:]]
    if not all(d.is_static and d.value >= TILE // 2 for d in sides):
        return False
    data_movement.call_transpose(lw, swap, lw.template("transpose"), src, tile=TILE)
    return True


def lower_permute(lw) -> None:
    swap = data_movement.inner_transpose(lw)
    if swap is None or not tiled(lw, swap, lw.src(lw.node.inputs[0])):
        data_movement.lower_permute(lw)


def lower_strided_copy(lw) -> None:
    """A fused chain of data movement (codegen/strided_copy.py), tiled where it transposes."""
    strided_copy.lower_strided_copy(lw, tiled)
