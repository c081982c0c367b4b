"""GPU lowerings of squeeze-excitation's bandwidth-bound steps, shared by the GPU backends.

The global average pool (templates/gpu/global_avg_pool.cu.j2) reads whole pixels' channels in
16-byte vectors; where the images alone would not fill the device it splits each image's pixels
into ranges and adds their float32 partial sums in a second kernel, in scratch that this
lowering reserves (at most MAX_PARTIALS rows of C floats). Where the depthwise conv that writes
the pool's input summed its tiles already (depthwise.pool_reader), only that second kernel runs.

The gate's mul `x[N, H, W, C] * s[N, 1, 1, C]` (MobileNetV3's and EfficientNet's blocks as the
importers write them) runs as templates/gpu/channel_scale.cu.j2, a pass over x in 16-byte
vectors, instead of the elementwise template's element-at-a-time loop. Any other mul is the
shared elementwise lowering.

Where only the block's projection (a 1x1 conv running as the GEMM) reads the product and the
map has more pixels than the conv has outputs (codegen/squeeze_excitation.scales), the mul emits
nothing: the conv scales its weights per image instead and runs a GEMM batched over the images
(gemm.scaled_pointwise), C x O products per image instead of HW x C, and the product is never
written out and read back. Elsewhere the scale stays a pass of its own, not a fused load: the
GEMM's mainloop reads A through TMA or cp.async tiles that cannot be scaled per (image, channel)
on the way in, and the map's writer (the depthwise conv) cannot apply it, since the gate is
computed from that conv's whole output.
"""

from __future__ import annotations

from ait_build.backends.gpu.gemm import folded_scale
from ait_build.codegen.cexpr import broadcast_strides, cexpr, elements
from ait_build.codegen.elementwise import lower_simple
from ait_build.codegen.kernel import io_params, make_kernel
from ait_build.ir.dims import Dim, bounds
from ait_build.ir.dtypes import ITEMSIZE

MAX_PARTIALS = 512  # images x pixel ranges of a pool's partial sums: 2 blocks a multiprocessor
MIN_RANGE_BYTES = 64 * 1024  # a smaller range is not worth the second kernel's launch
TILE_BYTES = 512  # a pool block's channels of one pixel: at most 32 vectors of 16 bytes


def lower_global_avg_pool(lw) -> None:
    node = lw.node
    x = node.inputs[0]
    n, h, w, c = lw.shape(x)
    if node.name in lw.plan.handed_on:  # the tiles' sums of the conv that wrote x
        sums, tiles = lw.plan.handed_on[node.name]
        params = [(f"{lw.ctype(node.output)}*", "out"), ("const float*", "tile_sums")]
        params += [("int64_t", p) for p in ("N", "HW", "C", "tiles")]
        kernel = make_kernel("global_avg_pool_of_tiles", node.op, lw.template("global_avg_pool"),
                             dict(ctype=lw.ctype(node.output), max_partials=MAX_PARTIALS,
                                  min_range_bytes=MIN_RANGE_BYTES, from_tiles=True), params)
        lw.call(kernel, [lw.dst(node.output), lw.src(sums), cexpr(n), cexpr(h * w), cexpr(c),
                         str(tiles)])
        return
    params = io_params(lw, node.output, "x") + [("int64_t", p) for p in ("N", "HW", "C")]
    kernel = make_kernel("global_avg_pool", node.op, lw.template("global_avg_pool"),
                         dict(ctype=lw.ctype(node.output), max_partials=MAX_PARTIALS,
                              min_range_bytes=MIN_RANGE_BYTES, from_tiles=False), params)
    dims = lw.plan.graph.dims
    channels, pixels = bounds(Dim.of(c), dims)[1], bounds(Dim.of(h * w), dims)[1]
    # scratch only where an image's channel tile can fill two ranges
    tile = min(channels * ITEMSIZE[lw.dtype(x)], TILE_BYTES)
    splits = pixels * tile >= 2 * MIN_RANGE_BYTES
    lw.call(kernel, [lw.dst(node.output), lw.src(x), cexpr(n), cexpr(h * w), cexpr(c)],
            scratch_shared=MAX_PARTIALS * channels * 4 if splits else 0)


def _channel_gate(lw) -> tuple | None:
    """(x, s, s's stride per image) when the node scales each image's channels by s."""
    node = lw.node
    if node.attrs.get("scalar") is not None or len(node.inputs) != 2:
        return None
    out_shape = tuple(lw.shape(node.output))
    if len(out_shape) < 3 or lw.dtype(node.output) not in ("float16", "bfloat16", "float32"):
        return None
    for x, s in (node.inputs, node.inputs[::-1]):
        if tuple(lw.shape(x)) != out_shape or tuple(lw.shape(s)) == out_shape:
            continue
        strides = broadcast_strides(lw.shape(s), out_shape)
        c = out_shape[-1]
        if Dim.of(strides[-1]) == 1 and all(Dim.of(v) == 0 for v in strides[1:-1]) \
                and Dim.of(strides[0]) in (Dim.of(0), Dim.of(c)):
            return x, s, strides[0]
    return None


def lower_mul(engine, lw) -> None:
    if folded_scale(engine, lw.plan, lw.node) is not None:
        return  # the projection after it scales its weights by the gate (gemm.scaled_pointwise)
    gate = _channel_gate(lw)
    if gate is None:
        lower_simple(lw)
        return
    x, s, s_stride = gate
    node = lw.node
    shape = lw.shape(node.output)
    params = io_params(lw, node.output, "x", "s") + [
        ("int64_t", p) for p in ("rows", "P", "C", "s_stride")]
    kernel = make_kernel("channel_scale", node.op, lw.template("channel_scale"),
                         dict(ctype=lw.ctype(node.output), shared_x=False), params)
    lw.call(kernel, [lw.dst(node.output), lw.src(x), lw.src(s), cexpr(elements(shape[:-1])),
                     cexpr(elements(shape[1:-1])), cexpr(shape[-1]), cexpr(s_stride)])
