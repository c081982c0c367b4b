"""GPU lowering of a conv over few input channels into few outputs (the stem of a mobile CNN:
MobileNetV3's 3 -> 16, EfficientNet's 3 -> 24 or 32 at stride 2), shared by the GPU backends:
templates/gpu/stem_conv.cu.j2 computes it directly on the CUDA cores, a thread per output pixel.

Such a conv is gathered into GEMM rows otherwise (im2col.py), and with so few outputs the rows
cost more than the conv: MobileNetV3-Large's stem at batch 128 writes and reads 103 MB of rows
to produce 51 MB of output, and im2col + GEMM took 0.565 ms of its 3.2 ms on the H200
(bench/results/h200/steps_mobilenet_v3_large_b128.json). A target opts in with
`direct_stem_outputs`: convs gathered by passes/pad_channels.gathers_windows into at most that
many outputs, whose float32 filters fit the kernel's shared memory, take this path.
"""

from __future__ import annotations

from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.op_geometry import conv_geometry, conv_kernel_params

FILTER_BYTES = 40 * 1024  # float32 [KH][KW][C][O] in one block's shared memory


def takes(win: dict, channels: int, outputs: int, most_outputs: int) -> bool:
    """Whether a gathered conv runs directly: at most `most_outputs` outputs (the target's
    direct_stem_outputs; 0: never), a multiple of 4, filters within FILTER_BYTES."""
    return (0 < outputs <= most_outputs and outputs % 4 == 0
            and win["kh"] * win["kw"] * channels * outputs * 4 <= FILTER_BYTES)


def lower(lw, epi, label: str) -> None:
    """The node's conv with its epilogue (gemm.Epilogue), direct."""
    node = lw.node
    (_, _, _, c, _, _, o), _, win, sizes, size_params = conv_geometry(lw)
    kh, kw, cv, ov = win["kh"], win["kw"], c.value, o.value
    ctype = lw.ctype(node.output)
    weights = lw.weight("weight", lambda a: a.transpose(2, 3, 1, 0), "hwio", (kh, kw, cv, ov),
                        dtype="float32")
    params = conv_kernel_params(ctype, "float", size_params)
    context = dict(ctype=ctype, act_fn=epi.fn, channels=cv, outputs=ov, **win)
    kernel = make_kernel(label, "conv2d", lw.template("stem_conv"), context, params)
    lw.call(kernel, [lw.dst(node.output), lw.src(node.inputs[0]), weights] + epi.args(lw) + sizes)
    epi.finish(lw, node.output)
