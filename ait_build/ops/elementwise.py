"""Elementwise ops: activations, clamps, broadcasting binary arithmetic, minimum/maximum, cast.

`ACTIVATIONS` is also the table of epilogues that conv2d/linear/matmul can apply (see epilogue.py;
`hardtanh`, whose bounds are attributes, is added there). Comparisons, logic and `where` are in
logic.py.
"""

from __future__ import annotations

import math

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, NUMPY
from ait_build.ops.opdef import (Attr, OpDef, TType, broadcast_shapes, register, require_float,
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


def clamp(x, low, high):
    """min(max(x, low), high) in x's dtype; a NaN stays NaN; None leaves that side open."""
    if low is not None:
        x = np.maximum(x, np.asarray(low, x.dtype))
    if high is not None:
        x = np.minimum(x, np.asarray(high, x.dtype))
    return x


def hardsigmoid(x):
    # the steps of the importers' relu6(x + 3) / 6, each rounded in x's dtype as they are unfused
    return clamp(x + np.asarray(3.0, x.dtype), 0.0, 6.0) / np.asarray(6.0, x.dtype)


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
    "relu6": lambda x: clamp(x, 0.0, 6.0),  # the op is a clamp row below
    "hardsigmoid": hardsigmoid,  # an epilogue only: the importers write relu6(x + 3) / 6
}

def _integer_safe(fn):
    """NumPy's floor_divide/remainder, quiet where an int divisor is 0 (the result is 0, as the
    kernels give it: a C++ integer division by zero would stop the process)."""
    def apply(a, b):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(a, b)
    return apply


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "minimum": np.minimum, "maximum": np.maximum,
          "floor_divide": _integer_safe(np.floor_divide), "remainder": _integer_safe(np.remainder)}


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
# unary math beyond the activations (not epilogues): the pieces exporters write GELU and
# norms with (x / sqrt(var), 0.5 x (1 + erf(x / sqrt 2)))
_erf = np.frompyfunc(math.erf, 1, 1)
MATH = {
    "sqrt": lambda x: np.sqrt(x),
    "exp": lambda x: np.exp(x),
    "erf": lambda x: np.asarray(_erf(x.astype(np.float64)), np.float64).astype(x.dtype),
    # rotary embeddings (sin, cos) and relative-position buckets (T5, DeBERTa: abs, sign, log,
    # ceil of position differences)
    "sin": lambda x: np.sin(x),
    "cos": lambda x: np.cos(x),
    "log": lambda x: np.log(x),
    "ceil": lambda x: np.ceil(x),
    "abs": lambda x: np.abs(x),
    "sign": lambda x: np.sign(x),
    # rounding and the accurate forms near 0 the importers build activations and rounded
    # positions from (elu's exp(x) - 1, softplus's log(1 + exp(x)))
    "floor": lambda x: np.floor(x),
    "round": lambda x: np.rint(x),
    "trunc": lambda x: np.trunc(x),
    "expm1": lambda x: np.expm1(x),
    "log1p": lambda x: np.log1p(x),
    "tan": lambda x: np.tan(x),
    "atan": lambda x: np.arctan(x),
}


def _math_row(name, doc, notes, infer=_same_float):
    fn = MATH[name]
    register(OpDef(name=name, category="elementwise", doc=doc, elementwise=True,
                   infer=infer, notes=notes,
                   reference=lambda attrs, xs, ws: [fn(xs[0])]))


_math_row("sqrt", "square root (NaN below 0)", "torch.sqrt; float tensors only.")
_math_row("exp", "e ** x", "torch.exp; float tensors only.")
_math_row("erf", "the error function", "torch.erf; float tensors only.")
_math_row("sin", "sine (radians)", "torch.sin; float tensors only.")
_math_row("cos", "cosine (radians)", "torch.cos; float tensors only.")
_math_row("log", "natural logarithm (-inf at 0, NaN below)", "torch.log; float tensors only.")
_math_row("ceil", "the smallest integer >= x, as a float", "torch.ceil; float tensors only.")
_math_row("floor", "the largest integer <= x, as a float", "torch.floor; float tensors only.")
_math_row("round", "x rounded to the nearest integer, halves to even, as a float",
          "torch.round (decimals=0); float tensors only.")
_math_row("trunc", "x rounded toward zero, as a float", "torch.trunc; float tensors only.")
_math_row("expm1", "exp(x) - 1, accurate near 0", "torch.expm1; float tensors only.")
_math_row("log1p", "log(1 + x), accurate near 0 (NaN below -1)", "torch.log1p; float tensors only.")
_math_row("tan", "tangent (radians)", "torch.tan; float tensors only.")
_math_row("atan", "arctangent (radians)", "torch.atan; float tensors only.")
_math_row("abs", "|x|; int tensors allowed", "torch.abs.", _same_numeric)
_math_row("sign", "-1, 0 or 1 by the sign of x (NaN stays NaN); int tensors allowed",
          "torch.sign.", _same_numeric)
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
_binary_row("minimum", "the smaller of a and b, NumPy broadcasting; NaN wins",
            "torch.minimum" + _SAME_TYPE)
_binary_row("maximum", "the larger of a and b, NumPy broadcasting; NaN wins",
            "torch.maximum" + _SAME_TYPE)
# Python's // and %: the quotient rounded down, the remainder taking the divisor's sign (hash
# buckets and positions computed from ids); an int divisor of 0 gives 0 for both
_binary_row("floor_divide", "floor(a / b), NumPy broadcasting; ints: 0 where b is 0",
            "torch.floor_divide, torch.div(rounding_mode='floor')" + _SAME_TYPE)
_binary_row("remainder", "a - floor(a / b) * b (the sign of b), NumPy broadcasting; ints: 0 "
            "where b is 0", "torch.remainder, Python's %" + _SAME_TYPE)


# -- clamps: min(max(x, low), high); a NaN stays NaN, as in PyTorch ----------------------------

def clamp_bounds(op: str, attrs: dict) -> tuple:
    """(low, high) of a clamp-family node; None leaves that side open."""
    if op == "relu6":
        return 0.0, 6.0
    if op == "hardtanh":
        return attrs["min_val"], attrs["max_val"]
    return attrs["min"], attrs["max"]


def _clamp_reference(op):
    def reference(attrs, xs, ws):
        return [clamp(xs[0], *clamp_bounds(op, attrs))]
    return reference


def _clamp_infer(attrs, inputs):
    x = _same_numeric(attrs, inputs)[0]
    low, high = attrs["min"], attrs["max"]
    if low is None and high is None:
        raise OpError("clamp needs 'min', 'max' or both")
    if x.dtype not in FLOAT_DTYPES:
        for bound in (low, high):
            if isinstance(bound, float) and not bound.is_integer():
                raise OpError(f"bound {bound} is not an integer but the input is {x.dtype}")
    return [x]


register(OpDef(
    name="clamp", category="elementwise", elementwise=True, infer=_clamp_infer,
    doc="min(max(x, min), max); either bound may be left out",
    attrs=(Attr("min", "number_or_none", None, doc="the lower bound; null: none"),
           Attr("max", "number_or_none", None, doc="the upper bound; null: none")),
    notes="torch.clamp with number bounds (min > max gives max everywhere, as in PyTorch); int "
          "tensors take integral bounds.",
    reference=_clamp_reference("clamp")))
register(OpDef(
    name="relu6", category="elementwise", elementwise=True, infer=_same_float,
    doc="min(max(x, 0), 6)", notes="torch.nn.functional.relu6; float tensors only.",
    reference=_clamp_reference("relu6")))


def leaky_relu(x, slope: float):
    """x where x > 0, else slope * x (NaN stays NaN), in float32 as the kernels compute it."""
    return np.where(x > 0, x, x * np.float32(slope))


register(OpDef(
    name="leaky_relu", category="elementwise", elementwise=True, infer=_same_float,
    doc="x where x > 0, else negative_slope * x",
    attrs=(Attr("negative_slope", "float", 0.01, doc="the slope below 0"),),
    notes="torch.nn.functional.leaky_relu (ONNX LeakyRelu's alpha); float tensors only; fuses "
          "into a GEMM's or conv's epilogue.",
    reference=lambda attrs, xs, ws: [leaky_relu(xs[0], attrs["negative_slope"])]))


def _hardtanh_infer(attrs, inputs):
    low, high = attrs["min_val"], attrs["max_val"]
    if math.isnan(low) or math.isnan(high):
        raise OpError("hardtanh's bounds must be numbers, got NaN")
    if low > high:  # PyTorch refuses it too ("min_val cannot be greater than max_val")
        raise OpError(f"hardtanh's min_val ({low}) is greater than its max_val ({high})")
    return _same_float(attrs, inputs)


register(OpDef(
    name="hardtanh", category="elementwise", elementwise=True, infer=_hardtanh_infer,
    doc="min(max(x, min_val), max_val)",
    attrs=(Attr("min_val", "float", -1.0, doc="the lower bound"),
           Attr("max_val", "float", 1.0, doc="the upper bound")),
    notes="torch.nn.functional.hardtanh; float tensors only; min_val above max_val is refused, "
          "as PyTorch refuses it.",
    reference=_clamp_reference("hardtanh")))


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
