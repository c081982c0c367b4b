"""Lowering of `strided_copy` (a chain of data movement fused into one node:
passes/fuse_data_movement.py) and of `pad`, on any backend. The chain's index map is one strided
view (ops/strided_view.py): without bounds it is the shared strided copy (or the backend's tiled
transpose, where the view swaps the two innermost axes); with bounds, or gathering single
elements, the `padded_copy` template, which writes the pad value where an index is out of range
in the same pass (no fill first) and compiles the static sizes in."""

from __future__ import annotations

from ait_build.codegen.cexpr import cexpr, contiguous_strides, elements
from ait_build.codegen import data_movement
from ait_build.codegen.data_movement import copy, offset, transposed
from ait_build.codegen.elementwise import literal
from ait_build.codegen.kernel import make_kernel
from ait_build.ir.dims import Dim
from ait_build.ops import strided_view


def fill_literal(lw, out: str, value: float) -> str:
    return literal(value, lw.dtype(out)) if lw.ctype(out) != "uint8_t" else str(int(bool(value)))


def concat_pieces(lw) -> tuple:
    """For a strided_copy reading the concat of its inputs: ((first, width) of each piece in a
    row of the concat, in elements, and the row's length); else ((), 0)."""
    node = lw.node
    axis = node.attrs.get("concat_axis")
    if axis is None:
        return (), 0
    inner = elements(lw.shape(node.inputs[0])[axis + 1:]).value
    pieces, at = [], 0
    for x in node.inputs:
        width = Dim.of(lw.shape(x)[axis]).value * inner
        pieces.append((at, width))
        at += width
    return tuple(pieces), at


def inner_axis(axes) -> int:
    """The axis a cpu thread walks along inside a row: the last, unless it is short (under 8)
    and another axis but the outermost is longer (the longest of those)."""
    last = len(axes) - 1
    sizes = {k: a.size.value for k, a in enumerate(axes) if 0 < k and a.size.is_static}
    if last < 2 or sizes.get(last, 8) >= 8:
        return last
    longest = max(sizes, key=lambda k: (sizes[k], k))
    return longest if sizes[longest] > sizes[last] else last


def padded_copy(lw, out: str, view: strided_view.View) -> None:
    """One pass writing `out` from the view `view` of the node's input (or of the concat of its
    inputs), the pad value out of range."""
    axes = strided_view.merged(view.axes) or [strided_view.Axis(elements(lw.shape(out)), 0)]
    rank, ctype = len(axes), lw.ctype(out)
    pieces, row = concat_pieces(lw)
    # sizes known at build time are compiled in (cheap index splits); the outermost axis is
    # never split, so its size (the batch, mostly) stays an argument and kernels are shared
    static = (0,) + tuple(a.size.value if a.size.is_static else 0 for a in axes[1:])
    inputs = [f"in{k}" for k in range(len(pieces))] or ["in"]
    context = dict(rank=rank, rows=" * ".join(f"n{k}" for k in range(rank - 1)) or "1",
                   outer_dims=tuple(reversed(range(rank - 1))), ctype=ctype,
                   inner=inner_axis(axes),
                   fill=fill_literal(lw, out, view.value or 0.0), static_sizes=static,
                   inputs=tuple(inputs), piece_first=tuple(p[0] for p in pieces),
                   piece_width=tuple(p[1] for p in pieces), piece_row=row)
    params = [(f"{ctype}*", "out")] + [(f"const {ctype}*", x) for x in inputs]
    params += [("int64_t", "base")]
    params += [("int64_t", f"{p}{k}") for k in range(rank) for p in ("n", "is", "lo", "hi")]
    kernel = make_kernel("padded_copy", lw.node.op, lw.template("padded_copy"), context, params)
    args = [lw.dst(out)] + [lw.src(x) for x in lw.node.inputs] + [cexpr(view.base)]
    for a in axes:
        lo, hi = (0, a.size) if a.full else (a.lo, a.hi)
        args += [cexpr(a.size), cexpr(a.stride), cexpr(lo), cexpr(hi)]
    lw.call(kernel, args)


def lower(lw, view: strided_view.View, tiled=None) -> None:
    """`lw.node`'s output from its input through `view`. `tiled(lw, swap, src)`: a backend's
    tiled transpose for (sizes, input strides, output strides) swapping the innermost axes, which
    answers False where it does not take them."""
    node = lw.node
    axes = strided_view.merged(view.axes)
    if not view.padded and len(node.inputs) == 1 and node.attrs.get("concat_axis") is None:
        x, out = node.inputs[0], node.output
        sizes = [a.size for a in axes]
        src = offset(lw.src(x), view.base)
        swap = transposed(sizes, [a.stride for a in axes], contiguous_strides(sizes))
        if swap is not None and tiled is not None and tiled(lw, swap, src):
            return
        if not axes or axes[-1].stride == 1:  # rows of contiguous runs: the copy's vectors
            copy(lw, lw.dst(out), src, lw.ctype(out), sizes, [a.stride for a in axes],
                 contiguous_strides(sizes), "strided_copy")
            return
    padded_copy(lw, node.output, view)  # a gather (and pads, pieces): index splits compiled in


def lower_strided_copy(lw, tiled=None) -> None:
    node = lw.node
    shape = list(lw.shape(node.inputs[0]))
    axis = node.attrs.get("concat_axis")
    if axis is not None:
        shape[axis] = sum((Dim.of(lw.shape(x)[axis]) for x in node.inputs), Dim.of(0))
    view = strided_view.compose(shape, node.attrs["steps"])
    if view is None:
        raise ValueError(f"internal: strided_copy '{node.name}' is not one strided view")
    lower(lw, view, tiled)


def lower_pad(lw) -> None:
    """A constant pad: one pass (padded_copy), the pad value written where no input lands."""
    node = lw.node
    step = strided_view.pad_step(node.attrs, lw.shape(node.output))
    view = strided_view.compose(lw.shape(node.inputs[0]), [step])
    if view is None:  # a pad of a symbolic dim: the fill and the strided copy
        data_movement.lower_pad(lw)
        return
    padded_copy(lw, node.output, view)
