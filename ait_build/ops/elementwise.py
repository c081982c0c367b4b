"""Elementwise ops: activations, broadcasting binary arithmetic, cast.

`ACTIVATIONS` is also the table of epilogues that conv2d/linear/matmul can apply (see epilogue.py).
"""

from __future__ import annotations

import math

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, NUMPY
from ait_build.ops.registry import (Attr, OpDef, TType, broadcast_shapes, register, require_float,
                                    same_float_dtype)

_erfc = np.frompyfunc(math.erfc, 1, 1)

# The reference is the oracle: gelu and sigmoid are computed in float64 and rounded once, in
# forms that do not cancel for x < 0 (1 + erf(t) = erfc(-t); 1 + tanh(u) = 2 sigmoid(2u)).


def gelu_erf(x):
    x64 = x.astype(np.float64)
    erfc = np.asarray(_erfc(-x64 / math.sqrt(2.0)), np.float64)  # frompyfunc gives objects
    return np.asarray(0.5 * x64 * erfc, x.dtype)


def _sigmoid64(x64):
    with np.errstate(over="ignore"):  # exp(-x) = inf for x < -709 gives the right 0
        return 1.0 / (1.0 + np.exp(-x64))


def gelu_tanh(x):
    x64 = x.astype(np.float64)
    inner = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64 ** 3)
    return np.asarray(x64 * _sigmoid64(2.0 * inner), x.dtype)


def sigmoid(x):
    return np.asarray(_sigmoid64(x.astype(np.float64)), x.dtype)


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


def _same_float(attrs, inputs):
    # the reference computes activations in float32; an int tensor would be silently truncated
    require_float(inputs[0], "the input")
    return [inputs[0]]


def _same_numeric(attrs, inputs):
    if inputs[0].dtype == "bool":
        raise OpError("the input must be numeric, got bool")
    return [inputs[0]]


def _unary_row(name, doc, torch_name, infer=_same_float):
    fn = ACTIVATIONS[name]
    only = "" if infer is _same_numeric else "; float tensors only"
    register(OpDef(name=name, category="elementwise", doc=doc, elementwise=True, infer=infer,
                   reference=lambda attrs, xs, ws: [fn(xs[0])], notes=f"{torch_name}{only}."))


_unary_row("relu", "max(x, 0); int tensors allowed, as in PyTorch", "torch.relu", _same_numeric)
_unary_row("silu", "x * sigmoid(x)", "torch.nn.functional.silu")
_unary_row("sigmoid", "1 / (1 + exp(-x))", "torch.sigmoid")
_unary_row("tanh", "hyperbolic tangent", "torch.tanh")
_unary_row("hardswish", "x * relu6(x + 3) / 6", "torch.nn.functional.hardswish")
register(OpDef(
    name="gelu", category="elementwise", elementwise=True, infer=_same_float,
    doc="Gaussian error linear unit; `approximate: tanh` for the tanh form",
    attrs=(Attr("approximate", "str", "none", ("none", "tanh"),
                doc="`tanh`: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"),),
    notes="torch.nn.functional.gelu, same `approximate` values; float tensors only.",
    reference=lambda attrs, xs, ws: [
        (gelu_tanh if attrs["approximate"] == "tanh" else gelu_erf)(xs[0])]))
register(OpDef(name="identity", category="elementwise", doc="returns its input", elementwise=True,
               infer=_same, reference=lambda attrs, xs, ws: [xs[0]]))


def _infer_binary(attrs, inputs, float_only=False):
    scalar = attrs.get("scalar")
    if scalar is not None and len(inputs) != 1:
        raise OpError("with 'scalar', give exactly one input")
    if scalar is None and len(inputs) != 2:
        raise OpError(f"expects 2 inputs (or 1 input and 'scalar'), got {len(inputs)}")
    dtype = same_float_dtype(inputs)
    if dtype == "bool":
        raise OpError("arithmetic on bool tensors is not supported (cast to a number type)")
    if float_only:  # true division of ints gives floats in PyTorch; we keep dtypes, so ask
        require_float(inputs[0], "div input")
    if scalar is not None and dtype not in FLOAT_DTYPES:
        if isinstance(scalar, float) and not scalar.is_integer():
            raise OpError(f"scalar {scalar} is not an integer but the input is {dtype} "
                          "(cast the input to a float type)")
        info = np.iinfo(NUMPY[dtype])
        if not info.min <= scalar <= info.max:
            raise OpError(f"scalar {scalar} is outside the range of {dtype} "
                          f"[{info.min}, {info.max}]")
    if scalar is not None:
        return [inputs[0]]
    return [TType(broadcast_shapes(inputs[0].shape, inputs[1].shape), dtype)]


def _binary_row(name, doc, notes):
    fn = BINARY[name]

    def infer(attrs, inputs):
        return _infer_binary(attrs, inputs, float_only=name == "div")

    def reference(attrs, xs, ws):
        if attrs.get("scalar") is not None:
            return [fn(xs[0], np.asarray(attrs["scalar"], dtype=xs[0].dtype))]
        return [fn(xs[0], xs[1])]

    register(OpDef(name=name, category="elementwise", doc=doc, elementwise=True,
                   inputs=("a", "b?"), infer=infer, reference=reference,
                   notes=notes,
                   attrs=(Attr("scalar", "number_or_none", None,
                               doc="a constant second operand instead of a second input"),)))


# no type promotion: operands share a dtype and the result keeps it
_SAME_TYPE = "; operands share one dtype, not bool; an int tensor takes only an integral scalar."
_binary_row("add", "a + b, NumPy broadcasting", "torch.add" + _SAME_TYPE)
_binary_row("sub", "a - b, NumPy broadcasting", "torch.sub" + _SAME_TYPE)
_binary_row("mul", "a * b, NumPy broadcasting", "torch.mul" + _SAME_TYPE)
_binary_row("div", "a / b, NumPy broadcasting; float tensors only",
            "torch.div; int tensors are rejected (PyTorch would return floats).")


register(OpDef(
    name="cast", category="elementwise", doc="converts to another dtype", elementwise=True,
    attrs=(Attr("dtype", "dtype", choices=ALL_DTYPES, doc="the output dtype"),),
    notes="Tensor.to(dtype): float to int truncates toward zero, to bool tests != 0.",
    infer=lambda attrs, xs: [TType(xs[0].shape, attrs["dtype"])],
    reference=lambda attrs, xs, ws: [_cast(xs[0], attrs["dtype"])]))


def _cast(x, dtype):
    # the reference computes floats in float32; a cast to a float type only rounds
    target = NUMPY[dtype]
    if target.kind == "f" or dtype == "bfloat16":
        return x.astype(target).astype(np.float32)
    return x.astype(target)
