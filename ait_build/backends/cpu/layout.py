"""cpu lowering of permutes that transpose the two innermost axes (after merging): a CNN's
NCHW -> NHWC input (3 channels), ShuffleNet's channel shuffles (2 groups). The shared strided
copy (codegen/data_movement.py) walks the output's innermost axis, here a few elements each read
far apart in the input, with a row's index arithmetic for every few elements. The transpose
kernel (templates/cpu/transpose.cpp.j2) reads tiles of the input's rows instead (figures in
docs/codegen.md). Other permutes keep the shared copy."""

from __future__ import annotations

from ait_build.codegen import data_movement
from ait_build.codegen.cexpr import cexpr, collapse
from ait_build.codegen.kernel import make_kernel


def lower_permute(lw) -> None:
    node = lw.node
    out_shape, in_strides, out_strides = data_movement.permute_strides(lw)
    sizes, (ist, ost) = collapse(out_shape, in_strides, out_strides)
    if len(sizes) < 2 or not (ist[-2] == 1 and ost[-1] == 1 and ist[-1] != 1):
        data_movement.lower_permute(lw)
        return
    rank = len(sizes)
    ctype = lw.ctype(node.output)
    context = dict(rank=rank, rows=" * ".join(f"n{k}" for k in range(rank - 2)) or "1",
                   outer_dims=tuple(reversed(range(rank - 2))), ctype=ctype)
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "in")]
    params += [("int64_t", f"{p}{k}") for p in ("n", "is", "os") for k in range(rank)]
    kernel = make_kernel("transpose", node.op, "cpu/transpose.cpp.j2", context, params)
    args = [lw.dst(node.output), lw.src(node.inputs[0])]
    lw.call(kernel, args + [cexpr(v) for v in list(sizes) + list(ist) + list(ost)])
