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
from ait_build.ops import strided_view


def fill_literal(lw, out: str, value: float) -> str:
    return literal(value, lw.dtype(out)) if lw.ctype(out) != "uint8_t" else str(int(bool(value)))


def padded_copy(lw, out: str, src: str, view: strided_view.View) -> None:
    """One pass writing `out` from the view `view` of tensor `src`, the pad value out of range."""
    axes = strided_view.merged(view.axes) or [strided_view.Axis(elements(lw.shape(out)), 0)]
    rank, ctype = len(axes), lw.ctype(out)
    # sizes known at build time are compiled in (cheap index splits); the outermost axis is
    # never split, so its size (the batch, mostly) stays an argument and kernels are shared
    static = (0,) + tuple(a.size.value if a.size.is_static else 0 for a in axes[1:])
    context = dict(rank=rank, rows=" * ".join(f"n{k}" for k in range(rank - 1)) or "1",
                   outer_dims=tuple(reversed(range(rank - 1))), ctype=ctype,
                   fill=fill_literal(lw, out, view.value or 0.0), static_sizes=static)
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "in"), ("int64_t", "base")]
    params += [("int64_t", f"{p}{k}") for k in range(rank) for p in ("n", "is", "lo", "hi")]
    kernel = make_kernel("padded_copy", lw.node.op, lw.template("padded_copy"), context, params)
    args = [lw.dst(out), lw.src(src), cexpr(view.base)]
    for a in axes:
        lo, hi = (0, a.size) if a.full else (a.lo, a.hi)
        args += [cexpr(a.size), cexpr(a.stride), cexpr(lo), cexpr(hi)]
    lw.call(kernel, args)


def lower(lw, view: strided_view.View, tiled=None) -> None:
    """`lw.node`'s output from its input through `view`. `tiled(lw, swap, src)`: a backend's
    tiled transpose for (sizes, input strides, output strides) swapping the innermost axes, which
    answers False where it does not take them."""
    node = lw.node
    x, out = node.inputs[0], node.output
    axes = strided_view.merged(view.axes)
    if not view.padded:
        sizes = [a.size for a in axes]
        src = offset(lw.src(x), view.base)
        swap = transposed(sizes, [a.stride for a in axes], contiguous_strides(sizes))
        if swap is not None and tiled is not None and tiled(lw, swap, src):
            return
        if not axes or axes[-1].stride == 1:  # rows of contiguous runs: the copy's vectors
            copy(lw, lw.dst(out), src, lw.ctype(out), sizes, [a.stride for a in axes],
                 contiguous_strides(sizes), "strided_copy")
            return
    padded_copy(lw, out, x, view)  # a gather (and the pads): index splits compiled in


def lower_strided_copy(lw, tiled=None) -> None:
    node = lw.node
    view = strided_view.compose(lw.shape(node.inputs[0]), node.attrs["steps"])
    if view is None:
        raise ValueError(f"internal: strided_copy '{node.name}' is not one strided view")
    lower(lw, view, tiled)


def lower_pad(lw) -> None:
    """A constant pad: one pass (padded_copy), the pad value written where no input lands."""
    node = lw.node
    step = ("pad", (("pads", tuple(node.attrs["pads"])), ("value", node.attrs["value"])),
            tuple(lw.shape(node.output)))
    view = strided_view.compose(lw.shape(node.inputs[0]), [step])
    if view is None:  # a pad of a symbolic dim: the fill and the strided copy
        data_movement.lower_pad(lw)
        return
    padded_copy(lw, node.output, node.inputs[0], view)
