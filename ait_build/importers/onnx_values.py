"""What the ONNX frontend's handlers share: known values (arrays, and Sizes, lists of our Dims),
node attributes, element types. from_onnx.py (the translator) and the handlers of onnx_ops.py
and onnx_shapes.py all import these; none of them imports another for them."""

from __future__ import annotations

import numpy as np

from ait_build.errors import AitError
from ait_build.ir.dims import Dim

ONNX_DTYPES = {1: "float32", 10: "float16", 16: "bfloat16", 6: "int32", 7: "int64", 9: "bool",
               11: "float32"}


class Sizes(list):
    """A 1-d int64 tensor known at import time whose entries are Dims (a shape, or part of one)."""


def is_known(value) -> bool:
    return isinstance(value, (np.ndarray, Sizes))


def as_sizes(value) -> Sizes:
    if isinstance(value, Sizes):
        return value
    return Sizes(Dim.of(int(v)) for v in np.asarray(value).reshape(-1))


def as_array(value):
    """A known value as a NumPy array; None when a size in it is symbolic."""
    if isinstance(value, np.ndarray):
        return value
    if all(d.is_static for d in value):
        return np.array([d.value for d in value], np.int64)
    return None


def attributes(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def owner(weight: str) -> str:
    """The node a weight belongs to: 'fc.weight' -> 'fc'."""
    return weight[:-len(".weight")] if weight.endswith(".weight") else weight


def element_type(t, onnx_type: int) -> str:
    dtype = ONNX_DTYPES.get(onnx_type)
    if dtype is None:
        raise AitError(f"element type {onnx_type} is not supported")
    return t.g.dtype if dtype in ("float32", "float16", "bfloat16") else dtype


def size_div(x: Dim, n: int) -> Dim:
    if x.is_static:
        return Dim.of(x.value // n)
    terms = []
    for names, coef in x.terms:
        if coef % n:
            raise AitError(f"size '{x}' is not divisible by {n}")
        terms.append((names, coef // n))
    out = Dim.of(0)
    for names, coef in terms:
        term = Dim.of(coef)
        for name in names:
            term = term * Dim.of(name)
        out = out + term
    return out
