"""Activations, normalized exponentials and statistics that are compositions of our ops, shared
by both importers (PyTorch's F.leaky_relu and ONNX's LeakyRelu write the same nodes). Each is a
few elementwise steps that the fusion pass joins into one kernel, written in the numerically
careful form PyTorch uses (expm1 and log1p near 0, the largest value taken out of a log of a sum
of exponentials). Every function takes the frontend's `Lower` first.
"""

from __future__ import annotations

import math

from ait_build.errors import AitError
from ait_build.ir.dims import Dim, numel
from ait_build.ops.opdef import norm_axis

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def positive_or(lower, x, negative):
    """x where x > 0, else `negative` (a value of x's shape or a number); NaN takes `negative`'s
    branch, which keeps it NaN as PyTorch does."""
    return lower.where_(lower.binary("greater", x, 0.0), x, negative)


def leaky_relu(lower, x, slope: float):
    """Its own op, so that it fuses into a GEMM's or conv's epilogue."""
    return lower.unary("leaky_relu", x, negative_slope=float(slope))


def prelu(lower, x, slope):
    """Leaky ReLU with a learned slope per channel (axis 1; `slope` [C] or [1]) or, from ONNX,
    broadcast against x as it is."""
    if slope.rank == 1 and x.rank > 2:
        slope = lower.reshape(slope, tuple(slope.source_shape) + (Dim.of(1),) * (x.rank - 2))
    return positive_or(lower, x, lower.binary("mul", x, slope))


def elu(lower, x, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0):
    """scale * (x if x > 0 else alpha * (exp(input_scale * x) - 1)): ELU, SELU (its constants)
    and CELU (input_scale 1 / alpha)."""
    inner = x if input_scale == 1.0 else lower.binary("mul", x, float(input_scale))
    negative = lower.binary("mul", lower.unary("expm1", inner), float(alpha * scale))
    positive = x if scale == 1.0 else lower.binary("mul", x, float(scale))
    return lower.where_(lower.binary("greater", x, 0.0), positive, negative)


def softplus(lower, x, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta x)) / beta, x itself where beta x > threshold (PyTorch's linear tail)."""
    bx = x if beta == 1.0 else lower.binary("mul", x, float(beta))
    soft = lower.unary("log1p", lower.unary("exp", bx))
    if beta != 1.0:
        soft = lower.binary("div", soft, float(beta))
    return lower.where_(lower.binary("greater", bx, float(threshold)), x, soft)


def mish(lower, x):
    return lower.binary("mul", x, lower.unary("tanh", softplus(lower, x)))


def log_sigmoid(lower, x):
    """log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)): finite for any x."""
    tail = lower.unary("log1p", lower.unary("exp", lower.binary("mul", lower.unary("abs", x),
                                                                 -1.0)))
    return lower.binary("sub", lower.binary("minimum", x, 0.0), tail)


def shrink(lower, x, lambd: float, bias: float = 0.0):
    """x - bias above lambd, x + bias below -lambd, else 0 (hardshrink: bias 0; softshrink:
    bias lambd; ONNX Shrink)."""
    above = x if bias == 0 else lower.binary("sub", x, float(bias))
    below = x if bias == 0 else lower.binary("add", x, float(bias))
    inner = lower.where_(lower.binary("less", x, -float(lambd)), below, 0.0)
    return lower.where_(lower.binary("greater", x, float(lambd)), above, inner)


def softsign(lower, x):
    return lower.binary("div", x, lower.binary("add", lower.unary("abs", x), 1.0))


def log_softmax(lower, x, axis: int):
    """(x - max) - log(sum(exp(x - max))) along `axis`."""
    shifted = lower.binary("sub", x, lower.max(x, [axis], True))
    total = lower.sum(lower.unary("exp", shifted), [axis], True)
    return lower.binary("sub", shifted, lower.unary("log", total))


def logsumexp(lower, x, axes: list, keepdim: bool):
    """max + log(sum(exp(x - max))), the max taken as 0 where it is infinite (a row of -inf
    sums to -inf, not NaN)."""
    top = lower.max(x, axes, True)
    finite = lower.binary("less", lower.unary("abs", top), math.inf)
    top = lower.where_(finite, top, 0.0)
    total = lower.sum(lower.unary("exp", lower.binary("sub", x, top)), axes, keepdim)
    if not keepdim:
        top = lower.reshape(top, tuple(d for i, d in enumerate(top.source_shape)
                                       if i not in [norm_axis(a, x.rank) for a in axes]))
    return lower.binary("add", lower.unary("log", total), top)


def glu(lower, x, axis: int):
    """The first half of x along `axis` gated by the sigmoid of the second."""
    size = x.source_shape[axis % x.rank]
    if not size.is_static or size.value % 2:
        raise AitError(f"glu over an axis of size {size} (an even, static size is needed)")
    a, b = lower.split(x, axis, [size.value // 2] * 2)
    return lower.binary("mul", a, lower.unary("sigmoid", b))


def variance(lower, x, axes: list, correction: float, keepdim: bool):
    """The mean of squared deviations over `axes`, times n / (n - correction)."""
    axes = [norm_axis(a, x.rank) for a in axes] if axes else list(range(x.rank))
    deviation = lower.binary("sub", x, lower.mean(x, axes, True))
    out = lower.mean(lower.binary("mul", deviation, deviation), axes, keepdim)
    if correction:
        n = numel(x.source_shape[a] for a in axes)
        if not n.is_static:
            raise AitError(f"a variance with correction {correction} over {n} elements (a "
                           "static count is needed)")
        if n.value <= correction:
            raise AitError(f"a variance with correction {correction} over {n.value} elements")
        out = lower.binary("mul", out, n.value / (n.value - correction))
    return out


def tri(lower, x, diagonal: int, upper: bool):
    """torch.tril / triu (ONNX Trilu): x where column - row <= diagonal (lower) or >= diagonal
    (upper) over the last two axes, else 0."""
    rows, cols = x.source_shape[-2:]
    row = lower.reshape(lower.iota((rows,), "int64"), (rows, Dim.of(1)))
    col = lower.reshape(lower.iota((cols,), "int64"), (Dim.of(1), cols))
    offset = lower.binary("sub", col, row)
    keep = lower.binary("greater_equal" if upper else "less_equal", offset, int(diagonal))
    return lower.where_(keep, x, 0 if x.dtype in ("int32", "int64") else 0.0)


def nan_to_num(lower, x, nan: float, posinf: float | None, neginf: float | None):
    """NaN, +inf and -inf replaced (the infinities by float32's extremes by default)."""
    big = 3.4028234663852886e38
    out = lower.where_(lower.binary("equal", x, math.inf), big if posinf is None else posinf, x)
    out = lower.where_(lower.binary("equal", x, -math.inf), -big if neginf is None else neginf,
                       out)
    return lower.where_(lower.binary("not_equal", x, x), float(nan), out)


# -- inverse trigonometric and hyperbolic functions ---------------------------------------------
# Written as atan, expm1 and log1p of arguments that lose no digits near the points where the
# naive forms cancel (acos near 1, sinh and asinh near 0, atanh near +-1); out of the domain the
# sqrt or log1p gives NaN, as PyTorch does. float32 error against PyTorch: a few 1e-7 relative.
LN2 = math.log(2.0)
BIG = 1e4  # asinh, acosh: above this, log(2x) (the dropped 1 / (4x^2) is below 1e-9)
LARGE = 88.0  # sinh, cosh: above this (e^x near float32's overflow), e^x / 2 in halves


def _odd(lower, x, magnitude):
    """sign(x) * f(|x|) for an odd f given as f(|x|) (0 stays 0, NaN stays NaN)."""
    return lower.binary("mul", lower.unary("sign", x), magnitude)


def asin(lower, x):
    """atan(x / sqrt((1 - x)(1 + x))): 1 - x and 1 + x are exact near x = 1 and -1; at
    |x| = 1 the quotient is +-inf and atan gives +-pi/2."""
    rest = lower.binary("mul", lower.binary("sub", 1.0, x), lower.binary("add", x, 1.0))
    return lower.unary("atan", lower.binary("div", x, lower.unary("sqrt", rest)))


def acos(lower, x):
    """2 atan(sqrt((1 - x) / (1 + x))): pi/2 - asin(x) would lose the digits near x = 1."""
    ratio = lower.binary("div", lower.binary("sub", 1.0, x), lower.binary("add", x, 1.0))
    return lower.binary("mul", lower.unary("atan", lower.unary("sqrt", ratio)), 2.0)


def _exp_halves_above(lower, a, near):
    """e^a / 2 as e^(a/2) (e^(a/2) / 2) where a > LARGE (sinh(a) and cosh(a) there: finite
    until e^a / 2 itself overflows), else `near`."""
    h = lower.unary("exp", lower.binary("mul", a, 0.5))
    far = lower.binary("mul", h, lower.binary("mul", h, 0.5))
    return lower.where_(lower.binary("greater", a, LARGE), far, near)


def sinh(lower, x):
    """sign(x) (e + e / (e + 1)) / 2 with e = expm1(|x|) (exact near 0)."""
    a = lower.unary("abs", x)
    e = lower.unary("expm1", a)
    near = lower.binary("mul", lower.binary(
        "add", e, lower.binary("div", e, lower.binary("add", e, 1.0))), 0.5)
    return _odd(lower, x, _exp_halves_above(lower, a, near))


def cosh(lower, x):
    """(e^|x| + e^-|x|) / 2."""
    a = lower.unary("abs", x)
    e = lower.unary("exp", a)
    near = lower.binary("mul", lower.binary("add", e, lower.binary("div", 1.0, e)), 0.5)
    return _exp_halves_above(lower, a, near)


def _log_2x_above(lower, a, near):
    """log(a) + log 2 where a > BIG (asinh(a) and acosh(a) there), else `near`."""
    far = lower.binary("add", lower.unary("log", a), LN2)
    return lower.where_(lower.binary("greater", a, BIG), far, near)


def asinh(lower, x):
    """sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): log(|x| + sqrt(x^2 + 1)) without the
    cancellation near 0."""
    a = lower.unary("abs", x)
    square = lower.binary("mul", a, a)
    tail = lower.binary("div", square, lower.binary(
        "add", lower.unary("sqrt", lower.binary("add", square, 1.0)), 1.0))
    near = lower.unary("log1p", lower.binary("add", a, tail))
    return _odd(lower, x, _log_2x_above(lower, a, near))


def acosh(lower, x):
    """log1p(t + sqrt(t) sqrt(t + 2)) with t = x - 1 (exact near 1); NaN below 1."""
    t = lower.binary("sub", x, 1.0)
    root = lower.binary("mul", lower.unary("sqrt", t), lower.unary("sqrt",
                                                                   lower.binary("add", t, 2.0)))
    return _log_2x_above(lower, x, lower.unary("log1p", lower.binary("add", t, root)))


def atanh(lower, x):
    """sign(x) log1p(2|x| / (1 - |x|)) / 2: of |x|, so 1 - |x| is exact near both ends."""
    a = lower.unary("abs", x)
    ratio = lower.binary("div", lower.binary("mul", a, 2.0), lower.binary("sub", 1.0, a))
    return _odd(lower, x, lower.binary("mul", lower.unary("log1p", ratio), 0.5))


INVERSE_AND_HYPERBOLIC = {"asin": asin, "acos": acos, "sinh": sinh, "cosh": cosh,
                          "asinh": asinh, "acosh": acosh, "atanh": atanh}
