"""Values made inside the model, with no input: `constant` (a filled tensor) and `iota` (positions
along an axis). With the comparisons and `where` (logic.py) they build masks whose sizes follow
the dims, such as a causal mask over `seq`."""

from __future__ import annotations

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import bounds, shape_str
from ait_build.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, NUMPY
from ait_build.ops.opdef import Attr, OpDef, TType, norm_axis, register


def _check_shape(shape) -> None:
    for d in shape:
        if d == -1 or d == 0 or (d.is_static and d.value < 1):
            raise OpError(f"shape {shape_str(shape)} must hold sizes >= 1 or dim names")


def _check_number(value, dtype: str, what: str) -> None:
    if dtype in FLOAT_DTYPES:
        return
    if dtype == "bool":
        if value not in (0, 1):
            raise OpError(f"{what} {value} must be 0 or 1 for a bool tensor")
        return
    if not float(value).is_integer():
        raise OpError(f"{what} {value} is not an integer but the dtype is {dtype}")
    info = np.iinfo(NUMPY[dtype])
    if not info.min <= value <= info.max:
        raise OpError(f"{what} {value} is outside the range of {dtype}")


def _constant_infer(attrs, inputs, model_dtype):
    _check_shape(attrs["shape"])
    dtype = attrs["dtype"] or model_dtype
    _check_number(attrs["value"], dtype, "value")
    return [TType(tuple(attrs["shape"]), dtype)]


def _constant_reference(attrs, xs, ws):
    dtype = attrs["dtype"] or "float32"  # the model dtype: a float, computed in float32 here
    value = attrs["value"]
    as_type = np.float32 if dtype in FLOAT_DTYPES else NUMPY[dtype]
    return [np.full(attrs["_out_shapes"][0], value if dtype in FLOAT_DTYPES else int(value),
                    dtype=as_type)]


register(OpDef(
    name="constant", category="constant", inputs=(),
    doc="a tensor filled with one value; sizes may be dim names",
    attrs=(Attr("shape", "shape", doc="sizes >= 1 or dim names"),
           Attr("value", "float", doc="the fill (a number; 0 or 1 for bool)"),
           Attr("dtype", "dtype", None, ALL_DTYPES, doc="default: the model dtype")),
    notes="torch.full(shape, value, dtype=dtype).",
    infer=_constant_infer, model_dtype=True, reference=_constant_reference))


def _iota_infer(attrs, inputs):
    _check_shape(attrs["shape"])
    norm_axis(attrs["axis"], len(attrs["shape"]))
    dtype = attrs["dtype"]
    _check_number(attrs["start"], dtype, "start")
    _check_number(attrs["step"], dtype, "step")
    return [TType(tuple(attrs["shape"]), dtype)]


def _iota_check_ranges(attrs, inputs, ranges):
    """An int iota's last value must fit its dtype at the largest dims: it would wrap around."""
    if attrs["dtype"] in INT_DTYPES:
        shape = attrs["shape"]
        n = bounds(shape[norm_axis(attrs["axis"], len(shape))], ranges)[1]
        last = int(attrs["start"]) + int(attrs["step"]) * (n - 1)  # exact: infer checked both
        _check_number(last, attrs["dtype"], f"its value at index {n - 1} (the largest dims),")


def iota_values(attrs, shape) -> np.ndarray:
    """start + step * (index along `axis`), broadcast over the other dims; computed in float64
    for float dtypes (then rounded once), exactly for ints."""
    axis = norm_axis(attrs["axis"], len(shape))
    dtype = attrs["dtype"]
    n = shape[axis]
    if dtype in FLOAT_DTYPES:
        line = (attrs["start"] + attrs["step"] * np.arange(n, dtype=np.float64)).astype(np.float32)
    else:
        line = int(attrs["start"]) + int(attrs["step"]) * np.arange(n, dtype=NUMPY[dtype])
    view = [1] * len(shape)
    view[axis] = n
    return np.ascontiguousarray(np.broadcast_to(line.reshape(view), shape))


register(OpDef(
    name="iota", category="constant", inputs=(),
    doc="start + step * i, i the index along `axis` (the same for every other index)",
    attrs=(Attr("shape", "shape", doc="sizes >= 1 or dim names"),
           Attr("axis", "int", -1, doc="the dim the value counts along"),
           Attr("start", "float", 0.0, doc="the first value"),
           Attr("step", "float", 1.0, doc="the increment"),
           Attr("dtype", "dtype", "int64", FLOAT_DTYPES + INT_DTYPES, doc="the output dtype")),
    notes="torch.arange(start, start + n * step, step) for a rank-1 shape; a larger shape "
          "broadcasts it along `axis` (arange(n).view(...).expand(shape)). An int iota's values "
          "must fit its dtype at the largest dims (they would wrap around).",
    infer=_iota_infer, check_ranges=_iota_check_ranges,
    reference=lambda attrs, xs, ws: [iota_values(attrs, attrs["_out_shapes"][0])]))
