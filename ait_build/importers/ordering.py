"""Sorting, selection and products along one axis, written with our ops and shared by both
importers (torch.sort/topk/kthvalue/median, ONNX TopK; torch.prod, cumprod, cummax, ONNX
ReduceProd). No kernel of ours sorts: the order comes from comparing every pair along the axis,
which is exact and runs on every backend, at N^2 elements a row, so the axis may be at most
MAX_SORTED long (at the largest size its dims allow). These axes are short in models (the experts of a mixture-of-experts
router, detection scores after a pre-selection, a token's candidates). Keys known to be positions
along an axis of R elements (a router's expert ids: topk's indices) sort by counting instead,
N x R elements a row: each key's place is the count of smaller keys plus that of equal ones
before it, and the order is those places written back (permute_elements), so a mixture of
experts sorts every routed row of a batch. Every function takes the frontend's `Lower` first.
"""

from __future__ import annotations

from ait_build.importers.graph import dim_attr
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import FLOAT_DTYPES

MAX_SORTED = 2048  # a row of N^2 pair comparisons: 4M elements at this size
MAX_COUNTED = 1 << 25  # a row of N x R key-bin pairs when sorting keys in 0..R-1 by counting


def _length(lower, x, axis: int, what: str) -> Dim:
    """The axis's size (a number or a dim), at most MAX_SORTED at the largest the dims allow."""
    n = x.source_shape[axis]
    largest = lower.largest(n)
    if largest > MAX_SORTED:
        lower.fail(f"{what} along {n} elements (up to {largest}): the importer sorts by "
                   f"comparing every pair, at most {MAX_SORTED}")
    return n


def counted_places(lower, x, axis: int, key_range: int, descending: bool):
    """int32 [..., n] (the axis last): the place along `axis` of each element of x, whose
    values are integers in 0..key_range-1, in a stable sort: #{j: x_j before x_i} +
    #{j < i: x_j == x_i}, from one [..., n, R] table of the keys against the bins."""
    last = x.rank - 1
    rows = lower.transpose(x, axis, last) if axis != last else x  # [..., n]
    lead, size, one = tuple(rows.source_shape[:-1]), rows.source_shape[-1], Dim.of(1)
    bins = lower.reshape(lower.iota((Dim.of(key_range),), rows.dtype),
                         tuple(one for _ in lead) + (one, Dim.of(key_range)))
    keys = lower.reshape(rows, lead + (size, one))
    hits = lower.cast(lower.binary("equal", keys, bins), "int32")  # [..., n, R]
    earlier = "greater" if descending else "less"  # bins that sort before the key's
    ahead = lower.sum(lower.cast(lower.binary(earlier, keys, bins), "int32"), [rows.rank - 1],
                      keepdim=True)  # [..., 1, R]: the keys before bin b's first place
    before = lower.cumsum(hits, rows.rank - 1, "int32", exclusive=True)  # equal keys before
    start = lower.binary("add", ahead, before)
    return lower.sum(lower.binary("mul", hits, start), [rows.rank], keepdim=False)


def sorted_positions(lower, x, axis: int, count, descending: bool, what: str = "a sort",
                     key_range: int | None = None):
    """int64 positions along `axis` of the first `count` elements of x in sorted order (ties in
    position order, as a stable sort leaves them): element i goes to place
    #{j: x_j before x_i} + #{j < i: x_j == x_i}, and place r reads the i that went there.
    `key_range` R: x holds integers in 0..R-1 (counted_places, no pairs compared)."""
    axis %= x.rank
    n = x.source_shape[axis]
    # the counts are sums taken as float32 means times the count (Lower.sum): within 0.5 of
    # the integer, which the rounding restores, up to about 2^20 elements
    if key_range is not None and lower.largest(n) * key_range <= MAX_COUNTED \
            and lower.largest(n) <= 1 << 20:
        last = x.rank - 1
        places = counted_places(lower, x, axis, key_range, descending)  # [..., n]
        lead = tuple(places.source_shape[:-1])
        order = lower.expand(lower.reshape(lower.iota((n,), "int64"),
                                           tuple(Dim.of(1) for _ in lead) + (n,)), lead + (n,))
        positions = lower.permute_elements(order, places, last)
        if Dim.of(count) != n:  # topk's first k
            positions = lower.slice(positions, last, 0, dim_attr(Dim.of(count)))
        elif axis == last:  # a write by this order can read by its inverse (scatter.put_along)
            lower.g.inverses[positions.ref] = places
        return lower.transpose(positions, axis, last) if axis != last else positions
    size = _length(lower, x, axis, what)
    last = x.rank - 1
    rows = lower.transpose(x, axis, last) if axis != last else x  # the axis last: [..., n]
    lead = tuple(rows.source_shape[:-1])
    one = Dim.of(1)
    mine = lower.reshape(rows, lead + (size, one))  # x_i down the rows
    other = lower.reshape(rows, lead + (one, size))  # x_j along the columns
    beats = lower.binary("greater" if descending else "less", other, mine)
    same = lower.binary("equal", other, mine)
    if x.dtype in FLOAT_DTYPES:  # NaN counts as the largest value, equal to NaN (PyTorch's)
        nan_other, nan_mine = (lower.binary("not_equal", v, v) for v in (other, mine))
        first, second = (nan_other, nan_mine) if descending else (nan_mine, nan_other)
        beats = lower.binary("logical_or", beats, lower.binary(
            "logical_and", first, lower.unary("logical_not", second)))
        same = lower.binary("logical_or", same, lower.binary("logical_and", nan_other, nan_mine))
    earlier = lower.binary("less", lower.reshape(lower.iota((size,), "int32"), (one, size)),
                           lower.reshape(lower.iota((size,), "int32"), (size, one)))
    tie = lower.binary("logical_and", same, earlier)
    ahead = lower.cast(lower.binary("logical_or", beats, tie), "int32")
    place = lower.sum(ahead, [x.rank], keepdim=False)  # [..., n]: where each element goes
    wanted = lower.reshape(lower.iota((Dim.of(count),), "int32"), (Dim.of(count), one))
    lands = lower.binary("equal", lower.reshape(place, lead + (one, size)), wanted)  # [.., k, n]
    source = lower.reshape(lower.iota((size,), "float32"), (one, size))
    found = lower.max(lower.where_(lands, source, 0.0), [x.rank], keepdim=False)  # [..., k]
    positions = lower.cast(found, "int64")  # every place has one element; 0 keeps reads inside
    return lower.transpose(positions, axis, last) if axis != last else positions


def sort(lower, x, axis: int, descending: bool, count: int | None = None,
         what: str = "a sort", key_range: int | None = None):
    """(values, int64 indices) of the first `count` (default all) elements of x sorted along
    `axis`; the values gathered, so exact in every dtype. `key_range`: sorted_positions'."""
    axis %= x.rank
    n = x.source_shape[axis]
    positions = sorted_positions(lower, x, axis, n if count is None else count, descending, what,
                                 key_range)
    return lower.gather_elements(x, positions, axis), positions


def pick(lower, x, axis: int, rank: int, keepdim: bool, what: str):
    """(value, index) of the element at place `rank` (from 0) of x sorted ascending along
    `axis`: torch.kthvalue (rank k - 1) and median (rank (n - 1) // 2, the lower median)."""
    axis %= x.rank
    values, positions = sort(lower, x, axis, False, rank + 1, what)
    chosen = [lower.slice(v, axis, rank, rank + 1) for v in (values, positions)]
    if keepdim:
        return tuple(chosen)
    shape = tuple(d for i, d in enumerate(x.source_shape) if i != axis) or (Dim.of(1),)
    return tuple(lower.reshape(v, shape) for v in chosen)


def product(lower, x, axes, keepdim: bool):
    """The product over `axes` (static sizes) by halving along each: the first half times the
    second, an odd element carried, until one is left (log2(n) multiplies, no logarithms, so
    zeros, signs and integers come out as PyTorch's; float rounding in another order)."""
    axes = sorted({a % x.rank for a in axes})
    for axis in axes:
        n = x.source_shape[axis]
        if not n.is_static:
            lower.fail(f"a product over {n} elements (only a static number)")
        n = n.value
        while n > 1:
            half = n // 2
            y = lower.binary("mul", lower.slice(x, axis, 0, half),
                             lower.slice(x, axis, half, 2 * half))
            x = lower.concat([y, lower.slice(x, axis, 2 * half, n)], axis) if n % 2 else y
            n = half + n % 2
    if keepdim:
        return x
    shape = tuple(d for i, d in enumerate(x.source_shape) if i not in axes) or (Dim.of(1),)
    return lower.reshape(x, shape)


def running_extreme(lower, x, axis: int, largest: bool):
    """(values, int64 indices) of torch.cummax / cummin: the running max (min) along `axis`,
    and the last position at or before each where x reached it. A position j where x_j equals
    the running value at j is where the value last changed or was equalled; the latest such j
    up to i is a running max of j there (else -1), a second scan."""
    axis %= x.rank
    op = "maximum" if largest else "minimum"
    values = lower.scan(x, axis, op)
    n = x.source_shape[axis]
    spots = lower.reshape(lower.iota((n,), "float32"), (n,) + (Dim.of(1),) * (x.rank - axis - 1))
    reached = lower.where_(lower.binary("equal", x, values), spots, -1.0)
    return values, lower.cast(lower.scan(reached, axis, "maximum"), "int64")
