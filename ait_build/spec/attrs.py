"""Op attributes from a spec node, checked against the op row's schema."""

from __future__ import annotations

import math

from ait_build.errors import Location, SpecError, did_you_mean, shown
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import ALL_DTYPES
from ait_build.ops.opdef import REQUIRED, OpDef
from ait_build.spec.fields import type_name
from ait_build.spec.model_fields import MAX_DIM
from ait_build.spec.yamlfile import YList, number_hint


INT64_MIN, INT64_MAX = -2**63, 2**63 - 1  # what the generated code holds an integer in


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int64(value, what: str, loc: Location) -> int:
    """An integer that fits int64 (YAML integers are unbounded; C++ would truncate them)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise SpecError(f"{what}: {shown(value)} does not fit in a 64-bit integer", loc)
    return value


def _dim(value, dims, loc, what):
    if _is_int(value):
        return Dim.of(_int64(value, what, loc))
    if isinstance(value, str):
        if value not in dims:
            raise SpecError(f"{what}: unknown dim {shown(value)}" + did_you_mean(value, dims), loc)
        return Dim.of(value)
    raise SpecError(f"{what}: expected an integer or a dim name, got {type_name(value)}", loc)


def convert(kind: str, value, name: str, dims: dict, loc: Location):
    """One attribute value, converted to its canonical Python form."""
    what = f"attribute '{name}'"
    if kind == "int":
        if not _is_int(value):
            raise SpecError(f"{what} must be an integer, got {type_name(value)} ({shown(value)})", loc)
        return _int64(value, what, loc)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{what} must be a number, got {type_name(value)} ({shown(value)})"
                            + number_hint(value), loc)
        return float(value)
    if kind == "epsilon":  # added to a variance: NaN, infinity or below 0 would poison outputs
        number = convert("float", value, name, dims, loc)
        if not (math.isfinite(number) and number >= 0):
            raise SpecError(f"{what} must be a finite number >= 0, got {shown(value)}", loc)
        return number
    if kind == "number_or_none":  # an integer stays one: int tensors take it exactly
        if value is None:
            return None
        if _is_int(value):
            return _int64(value, what, loc)
        return convert("float", value, name, dims, loc)
    if kind == "bool":
        if not isinstance(value, bool):
            raise SpecError(f"{what} must be true or false, got {type_name(value)} ({shown(value)})",
                            loc)
        return value
    if kind in ("str", "dtype"):
        if not isinstance(value, str):
            raise SpecError(f"{what} must be a string, got {type_name(value)}", loc)
        return value
    if kind == "ints":
        if not isinstance(value, list) or not all(_is_int(v) for v in value):
            raise SpecError(f"{what} must be a list of integers", loc)
        return tuple(_int64(v, what, loc) for v in value)
    if kind == "pair":  # window sizes, strides, pads, an image size: each a size of a dim
        if _is_int(value) or (isinstance(value, list) and len(value) == 2
                              and all(_is_int(v) for v in value)):
            values = [value] if _is_int(value) else value
            if any(abs(v) > MAX_DIM for v in values):
                raise SpecError(f"{what} must be at most {MAX_DIM} (a dim's largest size), got "
                                f"{shown(value)}", loc)
            return int(values[0]) if _is_int(value) else tuple(int(v) for v in values)
        raise SpecError(f"{what} must be an integer or a list of two integers", loc)
    if kind == "shape":
        if not isinstance(value, list):
            raise SpecError(f"{what} must be a list of sizes", loc)
        items = value.item_loc if isinstance(value, YList) else [loc] * len(value)
        return tuple(_dim(v, dims, items[i], what) for i, v in enumerate(value))
    if kind == "dim":
        return _dim(value, dims, loc, what)
    if kind == "dim_or_none":
        return None if value is None else _dim(value, dims, loc, what)
    raise AssertionError(f"unknown attribute kind {kind}")


def parse_attrs(op: OpDef, raw: dict, locs: dict, dims: dict, node_loc: Location, node: str) -> dict:
    """raw: attribute name -> (already substituted) value; locs: name -> Location."""
    known = {a.name for a in op.attrs}
    out = {}
    for key in raw:
        if key not in known:
            raise SpecError(f"op '{op.name}' has no attribute '{key}'" + did_you_mean(key, known)
                            + (f"; its attributes: {', '.join(sorted(known))}" if known else ""),
                            locs.get(key, node_loc))
    for attr in op.attrs:
        if attr.name in raw:
            value = convert(attr.kind, raw[attr.name], attr.name, dims, locs.get(attr.name, node_loc))
            if attr.choices and value not in attr.choices:
                raise SpecError(f"attribute '{attr.name}' must be one of "
                                + ", ".join(str(c) for c in attr.choices) + f", got {shown(value)}"
                                + did_you_mean(value, attr.choices), locs.get(attr.name, node_loc))
            if attr.kind == "dtype" and value not in ALL_DTYPES:
                raise SpecError(f"unknown dtype {shown(value)}" + did_you_mean(value, ALL_DTYPES),
                                locs.get(attr.name, node_loc))
            out[attr.name] = value
        elif attr.default is REQUIRED:
            raise SpecError(f"op '{op.name}' (node '{node}') needs attribute '{attr.name}'", node_loc)
        else:
            out[attr.name] = attr.default
    return out
