"""GPU lowering of depthwise conv2d (groups = input channels = output channels), shared by the
GPU backends: templates/gpu/depthwise_conv2d.cu.j2, a kernel built for memory bandwidth (each
thread a vector of channels for a strip of output pixels, inputs reused from registers across
the strip's overlapping windows), with the node's epilogue (bias, same-shaped residual,
activation) fused. Weights are float32 [KH][KW][C] (`<weight>@hwc`): the kernel computes in
float32 and converts each input once, so its weights need no conversion at all.

What the strip and vector widths are: the vector is one 16-byte access (8 float16/bfloat16 or 4
float32 channels) where the channels divide into it; 5- and 7-wide kernels in 16-bit types take
4 channels, so that their accumulators, one kernel row of weights and the input vectors in
flight fit about 120 registers (8 channels took 190-200: two blocks of 4 warps a
multiprocessor). The strip is the width
in 4..8 that wastes the fewest threads on the output's width (7 for ImageNet's 112/56/28/14/7
maps when 8 does not divide them).
"""

from __future__ import annotations

from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.op_geometry import conv_geometry
from ait_build.ir.dims import Dim

STRIPS = (8, 7, 6, 5, 4)  # output pixels per thread, widest first


def vector_width(dtype: str, channels: int, kw: int) -> int:
    """Channels per thread: a 16-byte vector, halved while it does not divide the channels."""
    size = 2 if dtype in ("float16", "bfloat16") else 4
    vec = 16 // size
    if size == 2 and kw >= 5:
        vec = 4
    while channels % vec:
        vec //= 2
    return vec


def strip_width(wo) -> int:
    """Output pixels along W per thread: the width that leaves the fewest idle pixels."""
    wo = Dim.of(wo)
    if not wo.is_static:
        return STRIPS[-1]
    if wo.value <= STRIPS[-1]:
        return max(wo.value, 1)
    return min(STRIPS, key=lambda t: (-(-wo.value // t) * t, -t))


def lower(lw, epi, label: str) -> None:
    """One depthwise conv node with its epilogue (gemm.Epilogue) and kernel label."""
    node = lw.node
    dims, _, win, sizes, size_params = conv_geometry(lw)
    _, _, _, c, _, wo, _ = dims
    kh, kw, cv = win["kh"], win["kw"], c.value
    dtype, ctype = lw.dtype(node.output), lw.ctype(node.output)
    weights = lw.weight("weight", lambda a: a.transpose(2, 3, 1, 0).reshape(kh, kw, cv), "hwc",
                        (kh, kw, cv))
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "x"), ("const float*", "w"),
              (f"const {ctype}*", "bias"), (f"const {ctype}*", "res")] + size_params
    context = dict(ctype=ctype, act_fn=epi.fn, vec=vector_width(dtype, cv, kw),
                   tw=strip_width(wo), channels=cv, **win)
    kernel = make_kernel(label, "conv2d", lw.template("depthwise_conv2d"), context, params)
    lw.call(kernel, [lw.dst(node.output), lw.src(node.inputs[0]), weights] + epi.args(lw) + sizes)
    epi.finish(lw, node.output)
