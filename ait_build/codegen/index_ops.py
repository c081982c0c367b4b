"""Lowerings of the ops that write by position, shared by every backend: `constant` (a fill),
`iota` (the index along an axis, through the elementwise template with the axis kept apart) and
`roll` (one strided copy per wrapped block)."""

from __future__ import annotations

import itertools

from ait_build.codegen.cexpr import cexpr, contiguous_strides, elements
from ait_build.codegen.data_movement import copy, offset
from ait_build.codegen.elementwise import Operand, elementwise, literal
from ait_build.codegen.kernel import make_kernel
from ait_build.ir.dims import Dim
from ait_build.ops.opdef import norm_axis
from ait_build.ops.shape import roll_shifts


def lower_constant(lw) -> None:
    node = lw.node
    out = node.output
    dtype = lw.dtype(out)
    value = node.attrs["value"]
    text = str(int(bool(value))) if dtype == "bool" else literal(value, dtype)
    elementwise(lw, "fill", Operand(lw.dst(out), lw.ctype(out), lw.shape(out)), [], text)


def lower_iota(lw) -> None:
    """out = start + step * i over [outer, n, inner] (or [outer, n] when the axis is last): the
    elementwise template names the row indices i0, i1 and the inner one j."""
    node = lw.node
    out = node.output
    shape = lw.shape(out)
    axis = norm_axis(node.attrs["axis"], len(shape))
    outer, n, inner = elements(shape[:axis]), shape[axis], elements(shape[axis + 1:])
    if inner == 1:
        sizes, index = [outer, n], "j"
    else:
        sizes, index = [outer, n, inner], "i1"
    dtype = lw.dtype(out)
    start, step = node.attrs["start"], node.attrs["step"]
    if dtype in ("int32", "int64"):
        expr = f"({literal(start, dtype)} + {literal(step, dtype)} * static_cast<{lw.ctype(out)}>({index}))"
    else:  # in double, rounded once, as the reference does
        expr = (f"static_cast<float>({float(start)!r} + {float(step)!r} * "
                f"static_cast<double>({index}))")
    rank = len(sizes)
    ctype = lw.ctype(out)
    context = dict(rank=rank, rows=" * ".join(f"n{k}" for k in range(rank - 1)),
                   outer_dims=tuple(reversed(range(rank - 1))), n_in=0, in_ctypes=(),
                   in_kinds=(), in_offsets=(), out_ctype=ctype, expr=expr, stmts=())
    params = [(f"{ctype}*", "out")] + [("int64_t", f"n{k}") for k in range(rank)]
    kernel = make_kernel("iota", node.op, lw.template("elementwise"), context, params)
    lw.call(kernel, [lw.dst(out)] + [cexpr(s) for s in sizes])


def lower_roll(lw) -> None:
    """Each rolled dim of size n by s splits into [0, n-s) -> [s, n) and [n-s, n) -> [0, s): one
    copy per combination of the halves (2 for one dim, 4 for Swin's two)."""
    node = lw.node
    x, out = node.inputs[0], node.output
    shape = lw.shape(x)
    shifts = roll_shifts(node.attrs, shape)
    strides = contiguous_strides(shape)
    src, dst, ctype = lw.src(x), lw.dst(out), lw.ctype(out)
    if not shifts:
        copy(lw, dst, src, ctype, [elements(shape)], [1], [1], "roll")
        return
    for halves in itertools.product((0, 1), repeat=len(shifts)):
        sizes = list(shape)
        at_in, at_out = Dim.of(0), Dim.of(0)
        for (axis, s), half in zip(shifts, halves):
            n = shape[axis].value
            # half 0: the first n-s elements move to s; half 1: the last s wrap to 0
            first_in, first_out, size = (0, s, n - s) if half == 0 else (n - s, 0, s)
            sizes[axis] = Dim.of(size)
            at_in = at_in + strides[axis] * first_in
            at_out = at_out + strides[axis] * first_out
        copy(lw, offset(dst, at_out), offset(src, at_in), ctype, sizes, strides, strides, "roll")

