"""cpu lowering of permutes that transpose the two innermost axes (after merging): a CNN's
NCHW -> NHWC input (3 channels), ShuffleNet's channel shuffles (2 groups). The shared strided
copy (codegen/data_movement.py) walks the output's innermost axis, here a few elements each read
far apart in the input, with a row's index arithmetic for every few elements. The transpose
kernel (templates/cpu/transpose.cpp.j2) reads tiles of the input's rows instead (figures in
docs/codegen.md). Other permutes keep the shared copy. A fused chain of data movement
(strided_copy) whose view is such a transpose takes the same kernel. An image's permute to NHWC
that only a conv on the direct path reads emits nothing: that conv reads the NCHW image."""

from __future__ import annotations

from ait_build.backends.cpu import gemm
from ait_build.codegen import data_movement, strided_copy
from ait_build.ir.dims import Dim


# an innermost output axis of at most this many values, contiguous: a constant the transpose
# unrolls (an image's channels, NCHW -> NHWC)
INTERLEAVE_MAX = 8


def tiled(lw, swap: tuple, src: str) -> bool:
    sizes, _, out_strides = (tuple(Dim.of(d) for d in part) for part in swap)
    inner = sizes[-1]
    interleave = 0
    if inner.is_static and inner.value <= INTERLEAVE_MAX and out_strides[-1] == Dim.of(1) \
            and out_strides[-2] == inner:
        interleave = inner.value
    data_movement.call_transpose(lw, swap, "cpu/transpose.cpp.j2", src, interleave=interleave)
    return True


def lower_permute(lw) -> None:
    graph = lw.plan.graph
    readers = graph.consumers().get(lw.node.output, [])
    if len(readers) == 1 and gemm.nchw_source(graph, readers[0]) == lw.node.inputs[0]:
        return  # the conv after it reads the NCHW image itself (gemm.nchw_source)
    swap = data_movement.inner_transpose(lw)
    if swap is None:
        data_movement.lower_permute(lw)
        return
    tiled(lw, swap, lw.src(lw.node.inputs[0]))


def lower_strided_copy(lw) -> None:
    """A fused chain of data movement (codegen/strided_copy.py), tiled where it transposes."""
    strided_copy.lower_strided_copy(lw, tiled)
