"""The index map of a chain of data-movement steps (reshape, permute, slice, constant pad) as one
strided view with bounds: the output, walked row-major over `axes`, reads input element
`base + sum(i_k * stride_k)` where every `lo_k <= i_k < hi_k`, and the pad value elsewhere.

An axis list can be longer than the output's rank: a dim that a reshape merged from axes the
input does not hold next to each other (ShuffleNet's channel shuffle: [2, 58] permuted to
[58, 2], then merged into 116 channels) stays two axes, each affine. What cannot be written this
way makes `compose` return None: a reshape, slice or pad that would cut an axis at a point that
is not a whole number of its inner axes (a bounded axis split across, a merged dim sliced
mid-way), or a symbolic size where a bound or a split needs a number.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ait_build.ir.dims import Dim, numel
from ait_build.ops.fused import step_attrs
from ait_build.ops.opdef import OPS, norm_axis
from ait_build.ops.shape import slice_range


@dataclass(frozen=True)
class Axis:
    size: Dim
    stride: Dim  # input elements per step along this axis
    lo: int | None = None  # valid index range [lo, hi); None: the whole axis is valid
    hi: int | None = None

    @property
    def full(self) -> bool:
        return self.lo is None

    def bounded(self, lo: int, hi: int) -> "Axis":
        """This axis with its valid range [lo, hi) clipped to its size (None when all of it)."""
        size = self.size.value
        lo, hi = max(lo, 0), min(hi, size)
        if lo <= 0 and hi >= size:
            return replace(self, lo=None, hi=None)
        return replace(self, lo=lo, hi=max(hi, lo))


@dataclass(frozen=True)
class View:
    groups: tuple  # one tuple of Axis per logical dim, outermost first; () is a dim of size 1
    base: Dim
    value: float | None = None  # the value of the pads so far (a view has one); None: no pad

    @property
    def axes(self) -> tuple:
        return tuple(a for g in self.groups for a in g)

    @property
    def padded(self) -> bool:
        return any(not a.full for a in self.axes)


def identity(shape) -> View:
    """A contiguous tensor of `shape` read as it is."""
    groups, stride = [], Dim.of(1)
    for d in reversed(tuple(shape)):
        groups.append((Axis(Dim.of(d), stride),))
        stride = stride * d
    return View(tuple(reversed(groups)), Dim.of(0))


def _inner(group) -> Dim:
    return numel([a.size for a in group[1:]])


def _static_multiple(value, of: Dim) -> int | None:
    """value / of when both are static and it divides exactly, else None."""
    value = Dim.of(value)
    if not (value.is_static and of.is_static) or value.value % of.value:
        return None
    return value.value // of.value


def _slice_axis(axis: Axis, start: Dim, length: Dim, step: int, base: Dim) -> tuple | None:
    """(new axis, new base) for axis[start : start + length * step : step]."""
    base = base + start * axis.stride
    if axis.full:
        return Axis(length, axis.stride * step), base
    if not (start.is_static and length.is_static):
        return None
    s = start.value
    lo, hi = -(-(axis.lo - s) // step), -(-(axis.hi - s) // step)
    return Axis(length, axis.stride * step).bounded(lo, hi), base


def _slice(view: View, axis: int, start: Dim, length: Dim, step: int) -> View | None:
    group = view.groups[axis]
    if not group:  # a dim of size 1 sliced whole
        return view
    inner = _inner(group)
    if len(group) > 1:  # a merged dim: cut along its outer axis only, at whole inner blocks
        first, count = _static_multiple(start, inner), _static_multiple(length, inner)
        if step != 1 or first is None or count is None:
            return None
        start, length = Dim.of(first), Dim.of(count)
    done = _slice_axis(group[0], start, length, step, view.base)
    if done is None:
        return None
    groups = list(view.groups)
    groups[axis] = (done[0],) + tuple(group[1:])
    return replace(view, groups=tuple(groups), base=done[1])


def _pad(view: View, pads, value: float) -> View | None:
    if view.value is not None and view.value != value:
        return None
    groups, base = list(view.groups), view.base
    for d, group in enumerate(groups):
        before, after = pads[2 * d], pads[2 * d + 1]
        if not (before or after):
            continue
        group = group or (Axis(Dim.of(1), Dim.of(0)),)
        inner = _inner(group)
        b, a = _static_multiple(before, inner), _static_multiple(after, inner)
        outer = group[0]
        if b is None or a is None or not outer.size.is_static:
            return None
        lo, hi = (0, outer.size.value) if outer.full else (outer.lo, outer.hi)
        grown = Axis(outer.size + b + a, outer.stride).bounded(lo + b, hi + b)
        base = base - outer.stride * b
        groups[d] = (grown,) + tuple(group[1:])
    return View(tuple(groups), base, float(value))


def merged(axes) -> list:
    """Neighbours that read the input contiguously become one axis (the inner must be whole;
    an outer one's bounds scale by the inner size)."""
    out: list = []
    for axis in axes:
        if axis.size == 1 and axis.full:
            continue
        if out:
            outer = out[-1]
            if axis.full and outer.stride == axis.stride * axis.size:
                size = outer.size * axis.size
                joined = Axis(size, axis.stride)
                if not outer.full:
                    if not axis.size.is_static:
                        out.append(axis)
                        continue
                    n = axis.size.value
                    joined = replace(joined, lo=outer.lo * n, hi=outer.hi * n)
                out[-1] = joined
                continue
        out.append(axis)
    return out


def _split_off(axis: Axis, outer_size: Dim) -> tuple | None:
    """`axis` as (outer axis of `outer_size`, inner axis of the rest), or None."""
    inner_size = axis.size.exact_div(outer_size)
    if inner_size is None:
        return None
    outer = Axis(outer_size, axis.stride * inner_size)
    inner = Axis(inner_size, axis.stride)
    if axis.full:
        return outer, inner
    lo, hi = _static_multiple(axis.lo, inner_size), _static_multiple(axis.hi, inner_size)
    if lo is None or hi is None:
        return None
    return outer.bounded(lo, hi), inner


def _reshape(view: View, shape) -> View | None:
    axes = merged(view.axes)
    groups = []
    for size in shape:
        size, group = Dim.of(size), []
        while True:
            want = size.exact_div(numel([a.size for a in group]))
            if want is None:
                return None
            if want == 1:
                break
            if not axes:
                return None
            axis = axes.pop(0)
            if want.exact_div(axis.size) is not None:  # the axis fits whole
                group.append(axis)
                continue
            parts = _split_off(axis, want)
            if parts is None:
                return None
            group.append(parts[0])
            axes.insert(0, parts[1])
        groups.append(tuple(group))
    if any(not (a.size == 1 and a.full) for a in axes):
        return None
    return View(tuple(groups), view.base, view.value)


def apply(view: View, op: str, attrs: dict, in_shape, out_shape) -> View | None:
    """`view` followed by one step (`op` with its full attrs), or None when not one view."""
    if op == "reshape":
        return _reshape(view, out_shape)
    if op == "permute":
        rank = len(view.groups)
        return replace(view, groups=tuple(view.groups[norm_axis(d, rank)] for d in attrs["dims"]))
    if op == "slice":
        axis = norm_axis(attrs["axis"], len(view.groups))
        start, length = slice_range(attrs, Dim.of(in_shape[axis]))
        return _slice(view, axis, start, length, attrs["step"])
    if op == "pad":
        return _pad(view, attrs["pads"], attrs["value"])
    raise ValueError(op)


def pad_step(attrs: dict, out_shape) -> tuple:
    """A `pad` node's step of a `strided_copy` (its pads and value), as `then` reads it."""
    return ("pad", (("pads", tuple(attrs["pads"])), ("value", attrs["value"])), tuple(out_shape))


def then(view: View, step, in_shape) -> View | None:
    """`view` (of a tensor of `in_shape`) followed by one step of a `strided_copy`'s `steps`
    ((op, ((attr, value), ...), output shape)), or None when that is not one view."""
    op, pairs, out_shape = step
    return apply(view, op, step_attrs(OPS[op], pairs), in_shape, out_shape)


def compose(in_shape, steps) -> View | None:
    """The view of `steps` (a `strided_copy`'s) over a contiguous input of `in_shape`, or None
    where they are not one view."""
    view = identity(in_shape)
    for step in steps:
        view = then(view, step, in_shape)
        if view is None:
            return None
        in_shape = step[2]
    return view
