"""ATen ops along one axis: the scans (cumsum and its inverse diff, cumprod, cummax, cummin),
products, sorting and selection (sort, argsort, topk, kthvalue, median), histograms (histc).
transformers' masks use cumsum and diff (GPT-2 tells packed sequences apart by
`(diff(position_ids, prepend=first - 1) != 1).cumsum(-1)`), routers count and sort short axes;
all are written with existing elementwise, copy and reduction ops (Lower.scan, ordering.py)
rather than as kernels of their own. The table joins torch_ops.HANDLERS.
"""

from __future__ import annotations

import operator

from ait_build.errors import AitError
from ait_build.importers import ordering
from ait_build.importers.graph import registrar
from ait_build.importers.torch_args import arg
from ait_build.importers.torch_args import key as _key
from ait_build.ir.dims import Dim

HANDLERS: dict = {}
handles = registrar(HANDLERS)


@handles("aten.cumsum.default")
def _cumsum(t, node):
    # the result's dtype: int64 for bools and integers, or the one the call asks for
    return t.lower.cumsum(t.tensor(node.args[0]), node.args[1], t.dtype(node))


@handles("aten.diff.default")
def _diff(t, node):
    """x[1:] - x[:-1] along `dim`, n times, after prepend and append; of bools, x[1:] != x[:-1]
    (torch's xor)."""
    x = t.tensor(node.args[0])
    n, dim = arg(node, 1, "n", 1), arg(node, 2, "dim", -1) % x.rank
    prepend, append = arg(node, 3, "prepend"), arg(node, 4, "append")
    if any(p is not None and not hasattr(p, "op") for p in (prepend, append)):
        raise AitError("diff with a number to prepend or append")
    parts = [t.tensor(p) for p in (prepend,) if p is not None] + [x] + \
        [t.tensor(a) for a in (append,) if a is not None]
    y = t.lower.concat(parts, dim) if len(parts) > 1 else x
    for _ in range(n):
        later, earlier = t.lower.slice(y, dim, 1, None), t.lower.slice(y, dim, 0, -1)
        y = t.lower.binary("not_equal" if y.dtype == "bool" else "sub", later, earlier)
    return y


@handles("aten.cumprod.default")
def _cumprod(t, node):
    return t.lower.scan(t.lower.cast(t.tensor(node.args[0]), t.dtype(node)), node.args[1], "mul")


@handles("aten.cummax.default", "aten.cummin.default")
def _running_extreme(t, node):
    return list(ordering.running_extreme(t.lower, t.tensor(node.args[0]), node.args[1],
                                         largest="cummax" in _key(node)))


@handles("aten.prod.dim_int", "aten.prod.default")
def _prod(t, node):
    x = t.lower.cast(t.tensor(node.args[0]), t.dtype(node))
    if _key(node).endswith(".default"):  # everything: one element
        return ordering.product(t.lower, t.lower.flat(x), [0], keepdim=True)
    return ordering.product(t.lower, x, [node.args[1]], bool(arg(node, 2, "keepdim", False)))


@handles("aten.sort.default", "aten.sort.stable", "aten.argsort.default",
         "aten.argsort.stable", "aten.msort.default")
def _sort(t, node):
    """Ties keep their order whether or not `stable` is asked for (torch leaves it open)."""
    key, x = _key(node), t.tensor(node.args[0])
    if key.endswith(".stable"):
        dim, descending = node.kwargs.get("dim", -1), node.kwargs.get("descending", False)
    else:
        dim, descending = arg(node, 1, "dim", -1), arg(node, 2, "descending", False)
    if key.startswith("aten.msort"):
        dim, descending = 0, False
    what = f"torch.{key.split('.')[1]}"
    keys = index_range(node.args[0])
    if key.startswith("aten.argsort"):
        return ordering.sorted_positions(t.lower, x, dim, x.source_shape[dim % x.rank],
                                         bool(descending), what, keys)
    values, indices = ordering.sort(t.lower, x, dim, bool(descending), what=what, key_range=keys)
    return values if key.startswith("aten.msort") else [values, indices]


# ops whose values are some of their input's (reshapes, slices, copies, integer casts):
# positions stay positions through them
SAME_VALUES = ("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default",
               "aten.flatten.using_ints", "aten.squeeze.dim", "aten.squeeze.dims",
               "aten.unsqueeze.default", "aten.clone.default", "aten.alias.default",
               "aten._to_copy.default", "aten.contiguous.default", "aten.expand.default",
               "aten.slice.Tensor", "aten.select.int", "aten.narrow.default",
               "aten.permute.default", "aten.transpose.int", "aten.t.default")
# ops whose second output (or only output) is a position along their input's `dim`
POSITIONS = {"aten.topk.default": (1, 2), "aten.sort.default": (1, 1),
             "aten.sort.stable": (1, None), "aten.argsort.default": (0, 1),
             "aten.argsort.stable": (0, None), "aten.argmax.default": (0, 1),
             "aten.argmin.default": (0, 1), "aten.max.dim": (1, 1), "aten.min.dim": (1, 1)}


def index_range(node) -> int | None:
    """R where every value of the FX node `node` is a position along an axis of R elements
    (a router's expert ids: topk's indices, or max's, through reshapes, casts and concats:
    PhiMoE's two picks), else None; a sort of such keys counts them (ordering.sorted_positions)."""
    while _key(node) in SAME_VALUES:
        node = node.args[0]
    if _key(node) in ("aten.cat.default", "aten.concat.default", "aten.concatenate.default"):
        ranges = [index_range(part) for part in node.args[0]]
        return max(ranges) if ranges and None not in ranges else None
    output = 0
    if _key(node) == str(operator.getitem) and len(node.args) == 2:
        node, output = node.args
    spec = POSITIONS.get(_key(node))
    if spec is None or spec[0] != output or not hasattr(node.args[0], "meta"):
        return None
    axis = node.kwargs.get("dim", -1) if spec[1] is None else \
        arg(node, spec[1], "dim", None if _key(node).startswith("aten.arg") else -1)
    shape = node.args[0].meta["val"].shape
    if axis is None:  # argmax over the flattened tensor
        return None
    size = shape[axis] if shape else 1
    return size if isinstance(size, int) and size > 0 else None


@handles("aten.topk.default")
def _topk(t, node):
    """The k largest (smallest) in order, ties in position order (torch's order is open)."""
    x, k = t.tensor(node.args[0]), int(node.args[1])
    values, indices = ordering.sort(t.lower, x, arg(node, 2, "dim", -1),
                                    bool(arg(node, 3, "largest", True)), k, "torch.topk")
    return [values, indices]


@handles("aten.kthvalue.default", "aten.median.dim", "aten.median.default")
def _kth(t, node):
    """kthvalue: the k-th smallest; median: the lower median ((n - 1) // 2 from the smallest),
    with its index (the first place it holds in a stable sort)."""
    key, x = _key(node), t.tensor(node.args[0])
    if key == "aten.median.default":  # of everything: the value alone, one element
        x = t.lower.flat(x)
        return ordering.pick(t.lower, x, 0, _middle(x.source_shape[0]), True, "torch.median")[0]
    if key.startswith("aten.kthvalue"):
        dim, keepdim = arg(node, 2, "dim", -1), bool(arg(node, 3, "keepdim", False))
        rank = int(node.args[1]) - 1
    else:
        dim, keepdim = node.args[1], bool(arg(node, 2, "keepdim", False))
        rank = _middle(x.source_shape[dim % x.rank])
    return list(ordering.pick(t.lower, x, dim, rank, keepdim, f"torch.{key.split('.')[1]}"))


@handles("aten.histc.default")
def _histc(t, node):
    """torch.histc: counts of x's elements in `bins` equal bins over [min, max] (the last bin
    takes max itself; others outside are not counted), PyTorch's bin (x - min) * bins /
    (max - min) truncated; min = max = 0 takes x's own extremes. Each element compared with
    every bin ([N, bins]) and the matches summed (MoE routers count tokens per expert so)."""
    x = t.lower.flat(t.tensor(node.args[0]))
    bins = int(arg(node, 1, "bins", 100))
    lo, hi = float(arg(node, 2, "min", 0)), float(arg(node, 3, "max", 0))
    low = high = None
    if lo == hi == 0:
        low, high = t.lower.min(x, [0], True), t.lower.max(x, [0], True)
    elif lo == hi:
        lo, hi = lo - 1, hi + 1  # PyTorch widens an empty range
    low = t.lower.number(lo, x.dtype) if low is None else low
    high = t.lower.number(hi, x.dtype) if high is None else high
    spot = t.lower.unary("floor", t.lower.binary(
        "div", t.lower.binary("mul", t.lower.binary("sub", x, low), float(bins)),
        t.lower.binary("sub", high, low)))
    spot = t.lower.binary("minimum", spot, float(bins - 1))  # max itself: the last bin
    inside = t.lower.binary("logical_and", t.lower.binary("greater_equal", x, low),
                            t.lower.binary("less_equal", x, high))
    size = x.source_shape[0]
    one, count = Dim.of(1), Dim.of(bins)
    table = t.lower.reshape(t.lower.iota((count,), x.dtype), (one, count))
    hits = t.lower.binary("logical_and", t.lower.binary(
        "equal", t.lower.reshape(spot, (size, one)), table), t.lower.reshape(inside, (size, one)))
    return t.lower.cast(t.lower.sum(t.lower.cast(hits, "int32"), [0], keepdim=False), x.dtype)


def _middle(n) -> int:
    if not n.is_static:
        raise AitError(f"a median of {n} elements (its place in the order must be static)")
    return (n.value - 1) // 2
