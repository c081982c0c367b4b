"""Comparisons, logic on bool tensors, `where` and `cumsum`: the ops that build masks and counts
inside a model (a causal mask from two iotas, Swin's shifted-window mask, masked_fill, GPT-2's
packed-sequence ids, a mixture of experts' rows per expert)."""

from __future__ import annotations

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dtypes import FLOAT_DTYPES, NUMPY
from ait_build.ops.opdef import (Attr, OpDef, TType, broadcast_shapes, norm_axis, register,
                                 same_float_dtype)

# name -> (NumPy function, C++ operator, PyTorch name)
COMPARISONS = {"equal": (np.equal, "==", "eq"), "not_equal": (np.not_equal, "!=", "ne"),
               "less": (np.less, "<", "lt"), "less_equal": (np.less_equal, "<=", "le"),
               "greater": (np.greater, ">", "gt"), "greater_equal": (np.greater_equal, ">=", "ge")}
LOGICAL = {"logical_and": (np.logical_and, "&&"), "logical_or": (np.logical_or, "||")}


def _check_scalar(scalar, dtype: str) -> None:
    if dtype == "bool":
        if scalar not in (0, 1):
            raise OpError(f"scalar {scalar} compared with a bool tensor must be 0 or 1")
        return
    if dtype not in FLOAT_DTYPES:
        if isinstance(scalar, float) and not scalar.is_integer():
            raise OpError(f"scalar {scalar} is not an integer but the input is {dtype}")
        info = np.iinfo(NUMPY[dtype])
        if not info.min <= scalar <= info.max:
            raise OpError(f"scalar {scalar} is outside the range of {dtype}")


def _compare_infer(attrs, inputs):
    scalar = attrs.get("scalar")
    if (scalar is None) != (len(inputs) == 2):
        raise OpError("give two inputs, or one input and 'scalar'")
    dtype = same_float_dtype(inputs)
    if scalar is not None:
        _check_scalar(scalar, dtype)
        return [TType(inputs[0].shape, "bool")]
    return [TType(broadcast_shapes(inputs[0].shape, inputs[1].shape), "bool")]


def _compare_row(name: str, fn, symbol: str, torch_name: str):
    def reference(attrs, xs, ws):
        other = xs[1] if attrs.get("scalar") is None else np.asarray(attrs["scalar"], xs[0].dtype)
        return [fn(xs[0], other)]

    register(OpDef(
        name=name, category="logic", elementwise=True, inputs=("a", "b?"),
        doc=f"a {symbol} b as a bool tensor, NumPy broadcasting",
        attrs=(Attr("scalar", "number_or_none", None,
                    doc="a constant second operand instead of a second input"),),
        notes=f"torch.{torch_name}; operands share one dtype (NaN compares as in IEEE: only != "
              "is true).",
        infer=_compare_infer, reference=reference))


for _name, (_fn, _symbol, _torch) in COMPARISONS.items():
    _compare_row(_name, _fn, _symbol, _torch)


def _require_bool(inputs):
    for t in inputs:
        if t.dtype != "bool":
            raise OpError(f"logical ops take bool tensors, got {t.dtype} (compare or cast first)")


def _logical_infer(attrs, inputs):
    _require_bool(inputs)
    return [TType(broadcast_shapes(*(t.shape for t in inputs)), "bool")]


for _name, (_fn, _symbol) in LOGICAL.items():
    register(OpDef(
        name=_name, category="logic", elementwise=True, inputs=("a", "b"),
        doc=f"a {_symbol} b on bool tensors, NumPy broadcasting",
        notes=f"torch.{_name}, bool tensors only.", infer=_logical_infer,
        reference=lambda attrs, xs, ws, fn=_fn: [fn(xs[0], xs[1])]))

register(OpDef(
    name="logical_not", category="logic", elementwise=True, doc="!x on a bool tensor",
    notes="torch.logical_not, bool tensors only.", infer=_logical_infer,
    reference=lambda attrs, xs, ws: [np.logical_not(xs[0])]))


def _where_infer(attrs, inputs):
    cond, x, y = inputs
    if cond.dtype != "bool":
        raise OpError(f"where's condition must be a bool tensor, got {cond.dtype}")
    dtype = same_float_dtype([x, y])
    return [TType(broadcast_shapes(cond.shape, x.shape, y.shape), dtype)]


register(OpDef(
    name="where", category="logic", elementwise=True, inputs=("condition", "x", "y"),
    doc="x where condition is true, else y; NumPy broadcasting over all three",
    notes="torch.where(condition, x, y); x and y share one dtype (masked_fill(x, m, v) is "
          "where(m, v, x) with v a `constant`).",
    infer=_where_infer, reference=lambda attrs, xs, ws: [np.where(xs[0], xs[1], xs[2])]))


def _cumsum_infer(attrs, inputs):
    x = inputs[0]
    if not x.shape or x.dtype == "bool":
        raise OpError(f"cumsum needs a number tensor of rank 1 or more, got {x.dtype} "
                      f"of rank {len(x.shape)}")
    norm_axis(attrs["axis"], len(x.shape))
    return [x]


def _cumsum_reference(attrs, xs, ws):
    x = xs[0]
    axis = norm_axis(attrs["axis"], x.ndim)
    wide = x.astype(np.float32 if x.dtype.kind == "f" else np.int64)
    if attrs["reverse"]:
        wide = np.flip(wide, axis)
    out = np.cumsum(wide, axis=axis)
    if attrs["exclusive"]:
        out = out - wide
    if attrs["reverse"]:
        out = np.flip(out, axis)
    return [out.astype(x.dtype)]


register(OpDef(
    name="cumsum", category="logic", inputs=("x",),
    doc="running sums along `axis`: out[i] = x[0] + ... + x[i] (from the end with `reverse`; "
        "without x[i] itself when `exclusive`), float types summed in float32",
    attrs=(Attr("axis", "int", -1, doc="the dim summed along"),
           Attr("exclusive", "bool", False, doc="leave each element out of its own sum"),
           Attr("reverse", "bool", False, doc="sum from the last element")),
    infer=_cumsum_infer, reference=_cumsum_reference,
    notes="torch.cumsum (ONNX CumSum with its exclusive and reverse attributes); integer sums "
          "wrap as the dtype does."))
