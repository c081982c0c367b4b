"""ONNX activations, rounding and masks that are compositions of our ops (activations.py, shared
with the PyTorch frontend). The table joins onnx_ops.HANDLERS."""

from __future__ import annotations

import math

from ait_build.importers import activations as act
from ait_build.importers.graph import registrar
from ait_build.importers.onnx_values import attributes
from ait_build.importers.sampling import grid_sample

HANDLERS: dict = {}
handles = registrar(HANDLERS)


@handles("LeakyRelu")
def _leaky_relu(t, node):
    return act.leaky_relu(t.lower, t.tensor(node, 0), attributes(node).get("alpha", 0.01))


@handles("PRelu")
def _prelu(t, node):
    """The slope broadcasts against x from the right (ONNX's rule, not PyTorch's axis 1)."""
    x = t.tensor(node, 0)
    return act.positive_or(t.lower, x, t.lower.binary("mul", x, t.tensor(node, 1)))


@handles("Elu", "Selu", "Celu")
def _elu(t, node):
    attrs, x = attributes(node), t.tensor(node, 0)
    if node.op_type == "Selu":
        return act.elu(t.lower, x, attrs.get("alpha", act.SELU_ALPHA),
                       attrs.get("gamma", act.SELU_SCALE))
    alpha = attrs.get("alpha", 1.0)
    return act.elu(t.lower, x, alpha, 1.0, 1.0 / alpha if node.op_type == "Celu" else 1.0)


@handles("Softplus")
def _softplus(t, node):
    # ONNX's Softplus has no linear tail: an infinite threshold keeps log(1 + exp(x)) throughout
    return act.softplus(t.lower, t.tensor(node, 0), 1.0, math.inf)


@handles("Softsign")
def _softsign(t, node):
    return act.softsign(t.lower, t.tensor(node, 0))


@handles("Mish")
def _mish(t, node):
    return act.mish(t.lower, t.tensor(node, 0))


@handles("ThresholdedRelu")
def _thresholded_relu(t, node):
    x = t.tensor(node, 0)
    above = t.lower.binary("greater", x, float(attributes(node).get("alpha", 1.0)))
    return t.lower.where_(above, x, 0.0)


@handles("Shrink")
def _shrink(t, node):
    attrs = attributes(node)
    return act.shrink(t.lower, t.tensor(node, 0), attrs.get("lambd", 0.5), attrs.get("bias", 0.0))


@handles("LogSoftmax")
def _log_softmax(t, node):
    return act.log_softmax(t.lower, t.tensor(node, 0), attributes(node).get("axis", -1))


@handles("GridSample")
def _grid_sample(t, node):
    attrs = attributes(node)
    text = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    mode = {"linear": "bilinear"}.get(text(attrs.get("mode", "bilinear")),
                                      text(attrs.get("mode", "bilinear")))
    return grid_sample(t.lower, t.tensor(node, 0), t.tensor(node, 1), mode,
                       text(attrs.get("padding_mode", "zeros")), bool(attrs.get("align_corners", 0)))


UNARY = {"Floor": "floor", "Round": "round", "Tan": "tan", "Atan": "atan"}


@handles(*UNARY)
def _unary(t, node):
    return t.lower.unary(UNARY[node.op_type], t.tensor(node, 0))


@handles(*(name.capitalize() for name in act.INVERSE_AND_HYPERBOLIC))
def _inverse_and_hyperbolic(t, node):
    """Asin, Acos, Sinh, Cosh, Asinh, Acosh, Atanh: the forms shared with torch.asin etc."""
    return act.INVERSE_AND_HYPERBOLIC[node.op_type.lower()](t.lower, t.tensor(node, 0))


@handles("IsInf")
def _isinf(t, node):
    attrs, x = attributes(node), t.tensor(node, 0)
    positive, negative = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    if positive and negative:
        return t.lower.binary("equal", t.lower.unary("abs", x), math.inf)
    if positive or negative:
        return t.lower.binary("equal", x, math.inf if positive else -math.inf)
    return t.lower.binary("less", x, -math.inf)  # detecting neither: false everywhere


@handles("Trilu")
def _trilu(t, node):
    k = t.ints(node, 1)
    return act.tri(t.lower, t.tensor(node, 0), int(k[0]) if k else 0,
                   upper=bool(attributes(node).get("upper", 1)))
