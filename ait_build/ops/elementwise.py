"""Elementwise ops: activations, broadcasting binary arithmetic, cast.

`ACTIVATIONS` is also the table of epilogues that conv2d/linear/matmul can apply (see epilogue.py).
"""

from __future__ import annotations

import math

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dtypes import ALL_DTYPES, NUMPY
from ait_build.ops.registry import Attr, OpDef, TType, broadcast_shapes, register, same_float_dtype

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(x):
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1.0 + _erf(x64 / math.sqrt(2.0)).astype(np.float64))).astype(x.dtype)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # tanh form: no overflow warnings for large |x|


# name -> NumPy function; these are the unary ops and the epilogue activations
ACTIVATIONS = {
    "none": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "gelu": gelu_erf,
    "gelu_tanh": gelu_tanh,
    "silu": lambda x: x * sigmoid(x),
    "sigmoid": sigmoid,
    "tanh": np.tanh,
    "hardswish": lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
}

BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


def _same(attrs, inputs):
    return [inputs[0]]


def _unary_row(name, doc):
    fn = ACTIVATIONS[name]
    register(OpDef(name=name, category="elementwise", doc=doc, elementwise=True, infer=_same,
                   reference=lambda attrs, xs, ws: [fn(xs[0])]))


_unary_row("relu", "max(x, 0)")
_unary_row("silu", "x * sigmoid(x)")
_unary_row("sigmoid", "1 / (1 + exp(-x))")
_unary_row("tanh", "hyperbolic tangent")
_unary_row("hardswish", "x * relu6(x + 3) / 6")
register(OpDef(
    name="gelu", category="elementwise", elementwise=True, infer=_same,
    doc="Gaussian error linear unit; `approximate: tanh` for the tanh form",
    attrs=(Attr("approximate", "str", "none", ("none", "tanh")),),
    reference=lambda attrs, xs, ws: [
        (gelu_tanh if attrs["approximate"] == "tanh" else gelu_erf)(xs[0])]))
register(OpDef(name="identity", category="elementwise", doc="returns its input", elementwise=True,
               infer=_same, reference=lambda attrs, xs, ws: [xs[0]]))


def _infer_binary(attrs, inputs):
    if attrs.get("scalar") is not None:
        if len(inputs) != 1:
            raise OpError("with 'scalar', give exactly one input")
        return [inputs[0]]
    if len(inputs) != 2:
        raise OpError(f"expects 2 inputs (or 1 input and 'scalar'), got {len(inputs)}")
    return [TType(broadcast_shapes(inputs[0].shape, inputs[1].shape), same_float_dtype(inputs))]


def _binary_row(name, doc):
    fn = BINARY[name]

    def reference(attrs, xs, ws):
        if attrs.get("scalar") is not None:
            return [fn(xs[0], np.asarray(attrs["scalar"], dtype=xs[0].dtype))]
        return [fn(xs[0], xs[1])]

    register(OpDef(name=name, category="elementwise", doc=doc, elementwise=True,
                   inputs=("a", "b?"), infer=_infer_binary, reference=reference,
                   attrs=(Attr("scalar", "number_or_none", None,
                               doc="a constant second operand instead of a second input"),)))


_binary_row("add", "a + b, NumPy broadcasting")
_binary_row("sub", "a - b, NumPy broadcasting")
_binary_row("mul", "a * b, NumPy broadcasting")
_binary_row("div", "a / b, NumPy broadcasting")


register(OpDef(
    name="cast", category="elementwise", doc="converts to another dtype", elementwise=True,
    attrs=(Attr("dtype", "dtype", choices=ALL_DTYPES),),
    infer=lambda attrs, xs: [TType(xs[0].shape, attrs["dtype"])],
    reference=lambda attrs, xs, ws: [_cast(xs[0], attrs["dtype"])]))


def _cast(x, dtype):
    # the reference computes floats in float32; a cast to a float type only rounds
    target = NUMPY[dtype]
    if target.kind == "f" or dtype == "bfloat16":
        return x.astype(target).astype(np.float32)
    return x.astype(target)
