"""What an attention mask computed from the dims alone is, for every size of those dims.

Importers write masks as small graphs over `iota`s: GPT-2's causal mask from transformers is
`kv <= q` and-ed with a packed-sequence test (`(diff(positions) != 1).cumsum()` equal along q and
kv, a `cumsum` of zeros) that is all true when the positions are an arange; DistilBERT's padding
mask is and-ed with `q >= 0`. This module follows such graphs symbolically, so the attention pass
can drop the parts that are always true and run the causal part as the kernel's causal mode,
without evaluating a mask at any particular size.

A tensor's value is one of:

- `Const(v)`: v everywhere;
- `Ramp(axis, start, step)`: start + step * i along one axis (counted from the end, so
  broadcasting keeps it), the same along every other axis;
- `Tri(q, k, offset)`: the boolean index[k] <= index[q] + offset (offset 0 over the last two axes:
  the causal mask);
- None: anything else (data from an input, or arithmetic this module does not follow).

Every rule is exact for all sizes: a rule that would need a size it cannot know gives None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ait_build.ir.dims import Dim
from ait_build.ir.graph import Graph
from ait_build.passes.rewrite import permute_dims


@dataclass(frozen=True)
class Const:
    value: float


@dataclass(frozen=True)
class Ramp:
    axis: int  # negative: counted from the last axis
    start: float
    step: float


@dataclass(frozen=True)
class Tri:
    q: int
    k: int
    offset: float


TRUE, FALSE = Const(True), Const(False)
CAUSAL = Tri(-2, -1, 0)


def _shape(graph: Graph, t: str) -> tuple:
    return tuple(graph.tensors[t].shape)


def _is_one(d: Dim) -> bool:
    return d.is_static and d.value == 1


def _moved(axis: int, src: tuple, dst: tuple) -> int | None:
    """Where an axis (from the end) of `src` lands in `dst` when a reshape only adds or drops
    dims of size 1; None when it does more."""
    keep_src = [i - len(src) for i, d in enumerate(src) if not _is_one(d)]
    keep_dst = [i - len(dst) for i, d in enumerate(dst) if not _is_one(d)]
    if [src[i] for i in keep_src] != [dst[i] for i in keep_dst] or axis not in keep_src:
        return None
    return keep_dst[keep_src.index(axis)]


def _compare(op: str, a, b):
    """The boolean value of `a op b` for every index."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(bool(COMPARE[op](a.value, b.value)))
    if op in ("greater", "greater_equal"):  # a > b is b < a
        return _compare({"greater": "less", "greater_equal": "less_equal"}[op], b, a)
    if isinstance(a, Ramp) and isinstance(b, Ramp) and a.axis != b.axis:
        # start_a + s i_a <= start_b + s i_b  <=>  i_a <= i_b + (start_b - start_a) / s
        if not a.step == b.step > 0 or op not in ("less", "less_equal"):
            return None
        offset = (b.start - a.start) / a.step
        if offset != math.floor(offset):
            return None
        return Tri(b.axis, a.axis, offset - 1 if op == "less" else offset)
    diff = _minus(a, b)  # one ramp against a constant, or two on one axis
    if isinstance(diff, Const):
        return Const(bool(COMPARE[op](diff.value, 0)))
    if not isinstance(diff, Ramp) or op not in ("less", "less_equal"):
        return None
    # start + step * i over i = 0, 1, ...: monotone, so its start and direction decide
    holds = diff.start < 0 if op == "less" else diff.start <= 0
    if diff.step <= 0 and holds:
        return TRUE
    if diff.step >= 0 and not holds:
        return FALSE
    return None


def _minus(a, b):
    if isinstance(b, Const):
        return _shift(a, -b.value)
    if isinstance(a, Const) and isinstance(b, Ramp):
        return Ramp(b.axis, a.value - b.start, -b.step)
    if isinstance(a, Ramp) and isinstance(b, Ramp) and a.axis == b.axis:
        return _ramp(a.axis, a.start - b.start, a.step - b.step)
    return None


def _ramp(axis: int, start, step):
    return Const(start) if step == 0 else Ramp(axis, start, step)


def _shift(a, c):
    if isinstance(a, Const):
        return Const(a.value + c)
    if isinstance(a, Ramp):
        return Ramp(a.axis, a.start + c, a.step)
    return None


def _arith(op: str, a, b):
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(ARITH[op](a.value, b.value))
    if op == "add":
        return _shift(a, b.value) if isinstance(b, Const) else \
            _shift(b, a.value) if isinstance(a, Const) else \
            _ramp(a.axis, a.start + b.start, a.step + b.step) \
            if isinstance(a, Ramp) and isinstance(b, Ramp) and a.axis == b.axis else None
    if op == "sub":
        return _minus(a, b)
    if op == "mul":
        ramp, c = (a, b) if isinstance(b, Const) else (b, a)
        if isinstance(ramp, Ramp) and isinstance(c, Const):
            return _ramp(ramp.axis, ramp.start * c.value, ramp.step * c.value)
    return None


COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
           "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal}
ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


class MaskValues:
    """Values of a graph's tensors (memoized), as the module docstring describes."""

    def __init__(self, graph: Graph, uses):
        self.graph = graph
        self.uses = uses
        self.memo: dict = {}

    def of(self, t: str):
        if t not in self.memo:
            self.memo[t] = None  # a cycle cannot happen; this only guards the recursion
            node = self.uses.made_by(t)
            value = None
            if node is not None and len(node.outputs) == 1:
                rule = RULES.get(node.op)
                value = rule(self, node) if rule else None
            self.memo[t] = _normal(value, _shape(self.graph, t))
        return self.memo[t]

    def inputs(self, node) -> list:
        values = [self.of(t) for t in node.inputs]
        if node.attrs.get("scalar") is not None:
            values.append(Const(node.attrs["scalar"]))
        return values


def _normal(value, shape: tuple):
    """A ramp along an axis of static size 1 is its start; a causal relation needs both axes."""
    if isinstance(value, Ramp) and (-value.axis > len(shape) or _is_one(shape[value.axis])):
        return Const(value.start)
    if isinstance(value, Const) and isinstance(value.value, (np.generic,)):
        return Const(value.value.item())
    return value


def _constant(mv, node):
    return Const(node.attrs["value"])


def _iota(mv, node):
    rank = len(node.attrs["shape"])
    axis = node.attrs["axis"] % rank - rank
    return _ramp(axis, node.attrs["start"], node.attrs["step"])


def _cumsum(mv, node):
    """Running sums of a constant c: c * (i + 1), or c * i exclusive (0 stays 0 either way; a
    reverse sum of c would need the axis's size)."""
    x = mv.of(node.inputs[0])
    if not isinstance(x, Const):
        return None
    if x.value == 0:
        return x
    if node.attrs["reverse"]:
        return None
    rank = len(_shape(mv.graph, node.inputs[0]))
    axis = node.attrs["axis"] % rank - rank
    return _ramp(axis, 0 if node.attrs["exclusive"] else x.value, x.value)


def _reshape(mv, node):
    value = mv.of(node.inputs[0])
    src, dst = _shape(mv.graph, node.inputs[0]), _shape(mv.graph, node.output)
    if isinstance(value, Const) or value is None:
        return value
    if isinstance(value, Ramp):
        axis = _moved(value.axis, src, dst)
        return None if axis is None else Ramp(axis, value.start, value.step)
    q, k = _moved(value.q, src, dst), _moved(value.k, src, dst)
    return None if q is None or k is None else Tri(q, k, value.offset)


def _expand(mv, node):
    return mv.of(node.inputs[0])  # axes from the end are where they were


def _slice(mv, node):
    value = mv.of(node.inputs[0])
    shape = _shape(mv.graph, node.inputs[0])
    axis = node.attrs["axis"] % len(shape) - len(shape)
    start, step = Dim.of(node.attrs["start"]), node.attrs["step"]
    if not start.is_static:
        return None
    start = start.value
    if start < 0:  # from the end: only a static size says where
        size = shape[axis].static_value
        if size is None:
            return None if not isinstance(value, Const) else value
        start = max(size + start, 0)
    if isinstance(value, Ramp) and value.axis == axis:
        return Ramp(axis, value.start + value.step * start, value.step * step)
    if isinstance(value, Tri) and axis in (value.q, value.k):
        return value if (start, step) == (0, 1) else None
    return value


def _pieces(mv, node, axis: int) -> list:
    """(value, static length or None) of each piece a concat or pad joins along `axis`."""
    if node.op == "concat":
        return [(mv.of(t), _shape(mv.graph, t)[axis].static_value) for t in node.inputs]
    shape = _shape(mv.graph, node.inputs[0])
    i = len(shape) + axis
    before, after = node.attrs["pads"][2 * i], node.attrs["pads"][2 * i + 1]
    fill = Const(node.attrs["value"])
    middle = (mv.of(node.inputs[0]), shape[axis].static_value)
    return ([(fill, before)] if before else []) + [middle] + ([(fill, after)] if after else [])


def _join(mv, node):
    """concat, or pad along one axis: one ramp when the pieces continue each other."""
    shape = _shape(mv.graph, node.output)
    if node.op == "concat":
        axis = node.attrs["axis"] % len(shape) - len(shape)
    else:
        pads = node.attrs["pads"]
        padded = [i - len(shape) for i in range(len(shape)) if pads[2 * i] or pads[2 * i + 1]]
        if len(padded) != 1:
            return mv.of(node.inputs[0]) if not padded else None
        axis = padded[0]
    pieces = _pieces(mv, node, axis)
    if any(v is None for v, _ in pieces):
        return None
    if not all(isinstance(v, Const) or (isinstance(v, Ramp) and v.axis == axis) for v, _ in pieces):
        return pieces[0][0] if all(v == pieces[0][0] for v, _ in pieces) else None
    ramps = [(v.value, 0) if isinstance(v, Const) else (v.start, v.step) for v, _ in pieces]
    # a piece of one element fits any step; the longer ones must share theirs
    steps = {step for (_, step), (_, length) in zip(ramps, pieces) if length != 1}
    if len(steps) > 1:
        return None
    step = steps.pop() if steps else None
    first, at = ramps[0][0], 0
    for (start, _), (_, length) in zip(ramps, pieces):
        if at is None:
            return None  # a piece after one of unknown length
        if at:
            if step is None:
                step = (start - first) / at
            if start != first + step * at:
                return None
        at = None if length is None else at + length
    return _ramp(axis, first, step or 0)


def _cast(mv, node):
    value = mv.of(node.inputs[0])
    dtype = node.attrs["dtype"]
    if isinstance(value, Const):
        v = value.value
        return Const(bool(v) if dtype == "bool" else (int(v) if dtype.startswith("int") else float(v)))
    if dtype == "bool":
        return None
    if isinstance(value, Ramp) and dtype.startswith("int"):
        exact = all(float(x).is_integer() for x in (value.start, value.step))
        return value if exact else None
    return value if not isinstance(value, Tri) else None


def _on_numbers(combine):
    """The rule of a binary op over constants and ramps (a `scalar` is its second operand)."""
    def rule(mv, node):
        a, b = mv.inputs(node)
        if not all(isinstance(v, (Const, Ramp)) for v in (a, b)):
            return None
        return combine(node.op, a, b)
    return rule


def _logical(mv, node):
    values = [mv.of(t) for t in node.inputs]
    if node.op == "logical_not":
        (v,) = values
        return Const(not v.value) if isinstance(v, Const) else None
    absorbing, neutral = (FALSE, TRUE) if node.op == "logical_and" else (TRUE, FALSE)
    if absorbing in values:
        return absorbing
    rest = [v for v in values if v != neutral]
    if not rest:
        return neutral
    return rest[0] if all(v == rest[0] for v in rest) else None


def _where(mv, node):
    cond, x, y = (mv.of(t) for t in node.inputs)
    if isinstance(cond, Const):
        return x if cond.value else y
    return None


def _permute(mv, node):
    """Axes move; output axis i is input axis dims[i]."""
    value = mv.of(node.inputs[0])
    if not isinstance(value, (Ramp, Tri)):
        return value
    dims = permute_dims(mv.graph, node)
    rank = len(dims)

    def moved(axis: int) -> int:
        return dims.index(axis % rank) - rank

    if isinstance(value, Ramp):
        return Ramp(moved(value.axis), value.start, value.step)
    return Tri(moved(value.q), moved(value.k), value.offset)


def _parameter(mv, node):
    """A weight: constant, or a lower-triangular boolean table (a causal buffer, sliced from
    its top-left corner) over its last two axes."""
    value = mv.graph.weights.get(node.weights["value"])
    if value is None or value.size == 0:
        return None
    flat = value.reshape(-1)
    if (flat == flat[0]).all():
        return Const(flat[0].item())
    if value.dtype != np.bool_ or value.ndim < 2:
        return None
    rows, cols = value.shape[-2:]
    tril = np.arange(cols)[None, :] <= np.arange(rows)[:, None]
    return CAUSAL if (value.reshape(-1, rows, cols) == tril).all() else None


RULES = {
    "constant": _constant, "iota": _iota, "reshape": _reshape, "flatten": _reshape,
    "expand": _expand, "slice": _slice, "concat": _join, "pad": _join, "cast": _cast,
    "identity": lambda mv, node: mv.of(node.inputs[0]),
    **{op: _on_numbers(_compare) for op in COMPARE}, **{op: _on_numbers(_arith) for op in ARITH},
    "logical_and": _logical, "logical_or": _logical, "logical_not": _logical, "where": _where,
    "parameter": _parameter, "permute": _permute, "transpose": _permute, "cumsum": _cumsum,
}
