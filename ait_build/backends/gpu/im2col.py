"""Explicit im2col for convs over fewer input channels than the target's alignment (the 3-channel
image of a stem conv: passes/pad_channels.gathers_windows), shared by the GPU backends.

Each output pixel's KH*KW*C window (zeros where it leaves the image) becomes one row of a
workspace matrix [N*HO*WO, K], K = KH*KW*C rounded up with zero columns to the widest access
the matrix engine reads; the conv is then the dense GEMM of those rows with the filters [O, K]
(gemm.py), with the conv's fused epilogue. Rather than padding the image to 8 channels and
running an implicit-GEMM conv whose reduction is mostly zeros (ResNet-50's 7x7 stem: 392
reduced values of which 147 are real), the GEMM reduces over K = 152 and the rows are written
once with 16-byte stores (templates/gpu/im2col.cu.j2: a block per run of output pixels of one
row, its windows' input rows staged in shared memory, the run's rows stored as one span).
"""

from __future__ import annotations

import numpy as np

from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.op_geometry import conv_geometry


STRIP_BYTES = 24 * 1024  # shared memory a block's strip of input rows may take


def tile_pixels(win: dict, channels: int, itemsize: int) -> int:
    """Output pixels of one row a block gathers: the most, up to 64, whose strip (the KH input
    rows their windows cover) fits in STRIP_BYTES; at least 1 (passes/pad_channels keeps a
    window too large for that off this path)."""
    tile = 64
    while tile > 1 and win["kh"] * ((tile - 1) * win["sw"] + (win["kw"] - 1) * win["dw"] + 1) \
            * channels * itemsize > STRIP_BYTES:
        tile //= 2
    return tile


def row_width(k: int, align: int) -> int:
    """K rounded up to a multiple of the engine's widest access (`align` elements)."""
    return -(-k // align) * align


def filter_rows(weight: np.ndarray, width: int) -> np.ndarray:
    """OIHW filters as the GEMM's [O, width] rows: (kh, kw, c) order as the gathered rows, zero
    columns after KH*KW*C."""
    o = weight.shape[0]
    rows = weight.transpose(0, 2, 3, 1).reshape(o, -1)
    return np.pad(rows, [(0, 0), (0, width - rows.shape[1])])


def gather(lw, align: int) -> tuple:
    """Writes the node's window rows into a workspace slot: (its pointer, the row width)."""
    node = lw.node
    x = node.inputs[0]
    (n, h, w, c, ho, wo, _), _, win, _, _ = conv_geometry(lw)
    ctype = lw.ctype(x)
    width = row_width(win["kh"] * win["kw"] * c.value, align)
    rows = lw.plan.add_slot(f"{node.name}:windows", ctype, (n, ho, wo, width)).var
    itemsize = lw.plan.backend.sizeof[ctype]
    vec = 16 // itemsize if width * itemsize % 16 == 0 else 1
    params = [(f"{ctype}*", "rows"), (f"const {ctype}*", "x")]
    params += [("int64_t", p) for p in ("N", "H", "W", "HO", "WO")]
    context = dict(ctype=ctype, bits=f"uint{8 * itemsize}_t", channels=c.value, width=width,
                   vec=vec, tile=tile_pixels(win, c.value, itemsize), **win)
    kernel = make_kernel("im2col", node.op, lw.template("im2col"), context, params)
    lw.call(kernel, [rows, lw.src(x)] + [cexpr(v) for v in (n, h, w, ho, wo)])
    return rows, width
