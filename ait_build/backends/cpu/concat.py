"""cpu lowering of a concat along the innermost axis (NHWC channel concats: SqueezeNet's fire
modules, GoogLeNet's and Inception's branches) as one kernel that writes each output row once, in
order, from every piece (templates/cpu/concat_rows.cpp.j2), instead of one strided copy per piece
(codegen/data_movement.py, which stays for other axes and for widths known only at run time).
Each piece's width is a constant there, so its row is a short fixed-size copy the compiler
inlines, where the strided copy paid a call and two divisions per row of 64-256 bytes."""

from __future__ import annotations

from ait_build.codegen import data_movement
from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.kernel import make_kernel

MAX_PIECES = 64  # one pointer argument per piece


def lower_concat(lw) -> None:
    node = lw.node
    out_shape = lw.shape(node.output)
    widths = data_movement.innermost_widths(lw, MAX_PIECES)
    if widths is None:
        data_movement.lower_concat(lw)
        return
    offsets = tuple(sum(widths[:i]) for i in range(len(widths)))
    ctype = lw.ctype(node.output)
    params = [(f"{ctype}*", "out")] + [(f"const {ctype}*", f"in{i}") for i in range(len(widths))]
    params += [("int64_t", "rows")]
    kernel = make_kernel("concat_rows", node.op, "cpu/concat_rows.cpp.j2",
                         dict(widths=widths, offsets=offsets, ctype=ctype), params)
    args = [lw.dst(node.output)] + [lw.src(x) for x in node.inputs]
    lw.call(kernel, args + [cexpr(elements(out_shape[:-1]))])
