"""GPU lowering of a concat along the innermost axis (NHWC channel concats: Inception's and
GoogLeNet's branches, SqueezeNet's fire modules, U-Net skips) as one kernel moving 16-byte runs
from every piece (templates/gpu/concat_rows.cu.j2), instead of one strided copy per piece
(codegen/data_movement.py, which stays for other axes, widths known only at run time and more
than MAX_PIECES pieces): Inception-v3 for h200 has 50 such copies in 15 concats."""

from __future__ import annotations

from ait_build.codegen import data_movement
from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.kernel import make_kernel

MAX_PIECES = 16  # one pointer argument per piece, and a comparison each to find a run's piece


def lower_concat(lw) -> None:
    node = lw.node
    widths = data_movement.innermost_widths(lw, MAX_PIECES)
    if widths is None:
        data_movement.lower_concat(lw)
        return
    ctype = lw.ctype(node.output)
    inputs = tuple(f"in{i}" for i in range(len(widths)))
    params = [(f"{ctype}*", "out")] + [(f"const {ctype}*", x) for x in inputs]
    params += [("int64_t", "rows")]
    offsets = tuple(sum(widths[:i]) for i in range(len(widths)))
    full = [i for i, w in enumerate(widths) if w]  # the pieces a run may come from
    context = dict(ctype=ctype, inputs=inputs, widths=widths, offsets=offsets,
                   piece_inputs=tuple(inputs[i] for i in full),
                   piece_first=tuple(offsets[i] for i in full),
                   piece_width=tuple(widths[i] for i in full))
    kernel = make_kernel("concat_rows", node.op, lw.template("concat_rows"), context, params)
    args = [lw.dst(node.output)] + [lw.src(x) for x in node.inputs]
    lw.call(kernel, args + [cexpr(elements(lw.shape(node.output)[:-1]))])
