"""Writes by position, built from our ops and shared by both importers: torch.scatter,
scatter_add and scatter_reduce (ONNX ScatterElements), and x[index] = values, index_put with
accumulate, index_add and index_copy (ONNX ScatterND along leading axes). No kernel of ours
scatters: each target place compares its position with every index along the axis (a [K, I]
table a row, exact), takes the last index that hits it (PyTorch's CPU order where indices
repeat) or combines all of them, and keeps x where none does: K * I at most MAX_PAIRS a row, at
the largest sizes the dims allow. Every function takes the frontend's `Lower`.
"""

from __future__ import annotations

from ait_build.importers import ordering
from ait_build.importers.graph import dim_attr
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import FLOAT_DTYPES

MAX_PAIRS = 1 << 22
REDUCTIONS = {None: None, "none": None, "sum": "sum", "add": "sum", "prod": "prod",
              "multiply": "prod", "mul": "prod", "amax": "max", "max": "max", "amin": "min",
              "min": "min", "mean": "mean"}


def _pairs(lower, target: Dim, count: Dim, what: str) -> None:
    """At most MAX_PAIRS place-index pairs a row, at the largest sizes the dims allow."""
    if lower.largest(target) * lower.largest(count) > MAX_PAIRS:
        lower.fail(f"{what} of {count} indices into {target} places: the importer compares "
                   f"every pair, at most {MAX_PAIRS}")


def _hits(lower, index, target: Dim):
    """bool [..., K, I]: place k along the last axis is where index i (taken modulo K: a
    negative one counts from the end) points."""
    lead, count, one = tuple(index.source_shape[:-1]), index.source_shape[-1], Dim.of(1)
    index = lower.flat_index([index], [target])
    places = lower.reshape(lower.iota((target,), "int64"), (target, one))
    return lower.binary("equal", lower.reshape(index, lead + (one, count)), places)


def _last_hit(lower, hits):
    """(float32 [..., K] the last i whose index hits place k, or -1; bool [..., K] any hit)."""
    count = hits.source_shape[-1]
    order = lower.reshape(lower.iota((count,), "float32"), (Dim.of(1), count))
    last = lower.max(lower.where_(hits, order, -1.0), [hits.rank - 1], keepdim=False)
    return last, lower.binary("greater_equal", last, 0.0)


def scatter_elements(lower, x, axis: int, index, src, reduce=None, include_self=True,
                     what="scatter"):
    """x with x[..., index[..., i, ...], ...] (along `axis`) set to src[..., i, ...], or
    combined with it by `reduce` (sum, prod, max, min, mean), x itself included (ONNX
    ScatterElements, scatter_reduce's default) or, for sum, prod and mean, not: then x stays
    only where nothing hits. `src` a Value or a number. The index must match x outside `axis`;
    src may be larger (cut to the index)."""
    axis %= x.rank
    last_axis = x.rank - 1
    for d in range(x.rank):
        if d != axis and index.source_shape[d] != x.source_shape[d]:
            lower.fail(f"{what} with an index of size {index.source_shape[d]} on axis {d}, "
                       f"where the tensor has {x.source_shape[d]}")
    target, count = x.source_shape[axis], index.source_shape[axis]
    _pairs(lower, target, count, what)

    def moved(v):  # the axis last
        return lower.transpose(v, axis, last_axis) if axis != last_axis else v
    xt, it = moved(x), moved(index)
    lead, one = tuple(xt.source_shape[:-1]), Dim.of(1)
    hits = _hits(lower, it, target)  # [..., K, I]
    if hasattr(src, "source_shape"):
        src = lower.cast(src, x.dtype)
        for d in range(x.rank):
            if src.source_shape[d] != index.source_shape[d]:
                src = lower.slice(src, d, 0, dim_attr(index.source_shape[d]))
        spread = lower.reshape(moved(src), lead + (one, count))  # [..., 1, I]
    else:
        spread = src
    kind = REDUCTIONS[reduce]
    floats = x.dtype in FLOAT_DTYPES
    if not include_self and kind in ("max", "min"):
        lower.fail(f"{what} by {reduce} without the tensor's own values (include_self=False)")
    own = xt if include_self or kind is None else lower.fill(
        (Dim.of(1),), 1 if kind == "prod" else 0, x.dtype)
    if kind is None:
        last, found = _last_hit(lower, hits)
        if hasattr(src, "source_shape"):
            taken = lower.gather_elements(moved(src), lower.cast(
                lower.binary("maximum", last, 0.0), "int64"), last_axis)
        else:
            taken = src
        out = lower.where_(found, taken, xt)
    elif kind in ("sum", "mean"):
        total = lower.binary("add", own, lower.sum(lower.where_(hits, spread, 0.0 if floats else 0),
                                                   [x.rank], keepdim=False))
        out = total
        if kind == "mean":  # over the values combined: the hits, and x where it is included
            counted = lower.cast(lower.sum(lower.cast(hits, "int32"), [x.rank], keepdim=False),
                                 x.dtype)
            counted = lower.binary("add", counted, 1) if include_self else \
                lower.binary("maximum", counted, 1)
            out = lower.binary("div" if floats else "floor_divide", total, counted)
    elif kind == "prod":
        factors = lower.where_(hits, spread, 1.0 if floats else 1)
        out = lower.binary("mul", own, ordering.product(lower, factors, [x.rank], keepdim=False))
    else:  # max, min: x's own value where nothing hits
        mine = lower.reshape(xt, lead + (target, one))
        pick = lower.max if kind == "max" else lower.min
        out = pick(lower.where_(hits, spread, mine), [x.rank], keepdim=False)
        out = lower.binary("maximum" if kind == "max" else "minimum", out, xt)
    if not include_self:
        out = lower.where_(_last_hit(lower, hits)[1], out, xt)
    return moved(out)


def put_along(lower, x, axis: int, index, values, accumulate: bool, what="index_put"):
    """x with the slices at 1-d `index` along `axis` replaced by (or, accumulating, added to)
    the slices of `values` (x's shape with the index's length on `axis`, or broadcasting to
    it): x[..., index, ...] = values, index_put, index_copy, index_add."""
    axis %= x.rank
    target, count = x.source_shape[axis], index.source_shape[0]
    shape = tuple(count if d == axis else s for d, s in enumerate(x.source_shape))
    values = lower.cast(values, x.dtype) if hasattr(values, "source_shape") else \
        lower.fill((Dim.of(1),), values, x.dtype)
    if values.rank < x.rank:
        values = lower.reshape(values, (Dim.of(1),) * (x.rank - values.rank) +
                               tuple(values.source_shape))
    values = lower.expand(values, shape)
    places = lower.g.inverses.get(index.ref)
    if places is not None and not accumulate and count == target:
        # the index is a permutation (a counted sort's order, ordering.sorted_positions), so
        # every place is written once: place k takes the slice whose index points at it, the
        # one the permutation's inverse names (inv_perm[perm] = arange: the inverse itself)
        return lower.gather(values, places, axis)
    _pairs(lower, target, count, what)
    hits = _hits(lower, index, target)  # [K, I]
    if accumulate:  # each place's sum over the indices that hit it: a [K, I] one-hot product
        ones = lower.cast(hits, x.dtype if x.dtype in FLOAT_DTYPES else "float32")
        rows = lower.transpose(values, axis, x.rank - 1) if axis != x.rank - 1 else values
        added = lower.matmul(lower.cast(rows, ones.dtype), lower.transpose(ones, 0, 1))
        added = lower.transpose(added, axis, x.rank - 1) if axis != x.rank - 1 else added
        if added.dtype != x.dtype:
            added = lower.cast(lower.unary("round", added), x.dtype)
        return lower.binary("add", x, added)
    last, found = _last_hit(lower, hits)  # [K]
    taken = lower.gather(values, lower.cast(lower.binary("maximum", last, 0.0), "int64"), axis)
    spread = (Dim.of(1),) * axis + (target,) + (Dim.of(1),) * (x.rank - axis - 1)
    return lower.where_(lower.reshape(found, spread), taken, x)
