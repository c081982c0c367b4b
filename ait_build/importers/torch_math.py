"""ATen activations, rounding, statistics and masks that are compositions of our ops
(activations.py holds the compositions both importers share). The table joins
torch_ops.HANDLERS.
"""

from __future__ import annotations

import math

from ait_build.errors import AitError
from ait_build.importers import activations as act
from ait_build.importers.composites import group_norm
from ait_build.importers.graph import registrar
from ait_build.importers.torch_args import arg
from ait_build.importers.torch_args import key as _key
from ait_build.ir.dims import Dim

HANDLERS: dict = {}
handles = registrar(HANDLERS)


# -- activations ------------------------------------------------------------------------------

@handles("aten.leaky_relu.default")
def _leaky_relu(t, node):
    return act.leaky_relu(t.lower, t.tensor(node.args[0]), arg(node, 1, "negative_slope", 0.01))


@handles("aten.prelu.default", "aten._prelu_kernel.default")
def _prelu(t, node):
    return act.prelu(t.lower, t.tensor(node.args[0]), t.tensor(node.args[1]))


@handles("aten.elu.default", "aten.selu.default", "aten.celu.default")
def _elu(t, node):
    x, key = t.tensor(node.args[0]), _key(node)
    if key == "aten.selu.default":
        return act.elu(t.lower, x, act.SELU_ALPHA, act.SELU_SCALE)
    alpha = float(arg(node, 1, "alpha", 1.0))
    if key == "aten.celu.default":
        return act.elu(t.lower, x, alpha, 1.0, 1.0 / alpha)
    return act.elu(t.lower, x, alpha, float(arg(node, 2, "scale", 1.0)),
                   float(arg(node, 3, "input_scale", 1.0)))


@handles("aten.softplus.default")
def _softplus(t, node):
    return act.softplus(t.lower, t.tensor(node.args[0]), float(arg(node, 1, "beta", 1.0)),
                        float(arg(node, 2, "threshold", 20.0)))


@handles("aten.mish.default")
def _mish(t, node):
    return act.mish(t.lower, t.tensor(node.args[0]))


@handles("aten.log_sigmoid.default", "aten.log_sigmoid_forward.default")
def _log_sigmoid(t, node):
    out = act.log_sigmoid(t.lower, t.tensor(node.args[0]))
    return [out, None] if _key(node).endswith("forward.default") else out


@handles("aten.hardshrink.default", "aten.softshrink.default")
def _shrink(t, node):
    lambd = float(arg(node, 1, "lambd", 0.5))
    return act.shrink(t.lower, t.tensor(node.args[0]), lambd,
                      lambd if "softshrink" in _key(node) else 0.0)


@handles("aten.glu.default")
def _glu(t, node):
    return act.glu(t.lower, t.tensor(node.args[0]), arg(node, 1, "dim", -1))


# -- normalized exponentials and statistics -----------------------------------------------------

@handles("aten.log_softmax.int", "aten._log_softmax.default")
def _log_softmax(t, node):
    x = t.lower.cast(t.tensor(node.args[0]), t.dtype(node))
    return act.log_softmax(t.lower, x, node.args[1])


@handles("aten.logsumexp.default")
def _logsumexp(t, node):
    x = t.lower.cast(t.tensor(node.args[0]), t.dtype(node))
    axes = list(arg(node, 1, "dim", []) or range(x.rank))
    return act.logsumexp(t.lower, x, axes, bool(arg(node, 2, "keepdim", False)))


@handles("aten.var.dim", "aten.var.correction", "aten.std.dim", "aten.std.correction",
         "aten.var_mean.dim", "aten.var_mean.correction", "aten.std_mean.dim",
         "aten.std_mean.correction")
def _variance(t, node):
    """var / std (and their _mean forms: (statistic, mean)) over dims, unbiased by default."""
    key = _key(node)
    x = t.tensor(node.args[0])
    dims = arg(node, 1, "dim")
    axes = list(range(x.rank)) if not dims else [d % x.rank for d in dims]
    if key.endswith(".dim"):
        correction = 1.0 if arg(node, 2, "unbiased", True) else 0.0
        keepdim = bool(arg(node, 3, "keepdim", False))
    else:
        correction = node.kwargs.get("correction")
        correction = 1.0 if correction is None else float(correction)
        keepdim = bool(node.kwargs.get("keepdim", False))
    out = act.variance(t.lower, x, axes, correction, keepdim)
    if key.startswith("aten.std"):
        out = t.lower.unary("sqrt", out)
    if "_mean" in key:
        return [out, t.lower.mean(x, axes, keepdim)]
    return out


@handles("aten.instance_norm.default")
def _instance_norm(t, node):
    """Each image's channels normalized over their own positions: a group norm of one channel a
    group (running statistics only where use_input_stats is off)."""
    x = t.tensor(node.args[0])
    weight, bias = (t.tensor(a) if a is not None else None for a in node.args[1:3])
    if not node.args[5]:
        raise AitError("instance_norm with running statistics (track_running_stats in eval mode)")
    channels = x.source_shape[1]
    if not channels.is_static:
        raise AitError(f"instance_norm over {channels} channels (a static count is needed)")
    return group_norm(t.lower, x, channels.value, weight, bias, float(node.args[7]))


@handles("aten.cosine_similarity.default")
def _cosine_similarity(t, node):
    """x1 . x2 / sqrt(max(|x1|^2 |x2|^2, eps^2)) along dim, as PyTorch computes it."""
    a, b = t.tensor(node.args[0]), t.tensor(node.args[1])
    axis, eps = arg(node, 2, "dim", 1), float(arg(node, 3, "eps", 1e-8))
    dot = t.lower.sum(t.lower.binary("mul", a, b), [axis], False)
    norms = t.lower.binary("mul", t.lower.sum(t.lower.binary("mul", a, a), [axis], False),
                           t.lower.sum(t.lower.binary("mul", b, b), [axis], False))
    return t.lower.binary("div", dot, t.lower.unary("sqrt", t.lower.binary("maximum", norms,
                                                                           eps * eps)))


@handles("aten.pairwise_distance.default")
def _pairwise_distance(t, node):
    """|x1 - x2 + eps|_p over the last axis."""
    a, b = t.tensor(node.args[0]), t.tensor(node.args[1])
    p, eps = arg(node, 2, "p", 2.0), float(arg(node, 3, "eps", 1e-6))
    diff = t.lower.binary("add", t.lower.binary("sub", a, b), eps)
    return t.lower.vector_norm(diff, p, [-1], bool(arg(node, 4, "keepdim", False)))


@handles("aten.sum.default", "aten.mean.default")
def _reduce_all(t, node):
    x = t.lower.flat(t.lower.cast(t.tensor(node.args[0]), t.dtype(node)))
    reduce = t.lower.sum if _key(node).startswith("aten.sum") else t.lower.mean
    return t.lower.reshape(reduce(x, [0], False), ())


@handles("aten.any.dim", "aten.any.dims", "aten.any.default", "aten.all.dim", "aten.all.dims",
         "aten.all.default")
def _any_all(t, node):
    """any: the largest of (x != 0) is 1; all: the least is."""
    x = t.tensor(node.args[0])
    key = _key(node)
    dims = arg(node, 1, "dim") if not key.endswith(".default") else None
    dims = [dims] if isinstance(dims, int) else dims
    keepdim = bool(arg(node, 2, "keepdim", False))
    if not dims:
        x, dims, keepdim = t.lower.flat(x), [0], False
    flags = t.lower.cast(t.lower.binary("not_equal", x, 0), "float32")
    out = (t.lower.max if "any" in key else t.lower.min)(flags, list(dims), keepdim)
    out = t.lower.binary("greater", out, 0.0)
    return t.lower.reshape(out, ()) if key.endswith(".default") else out


# -- rounding and arithmetic ----------------------------------------------------------------------

@handles("aten.floor.default", "aten.round.default", "aten.trunc.default", "aten.fix.default",
         "aten.round.decimals")
def _rounding(t, node):
    """floor/round/trunc; of an int tensor the tensor itself, as in PyTorch."""
    x = t.tensor(node.args[0])
    if x.dtype in ("int32", "int64"):
        return x
    op = {"fix": "trunc"}.get(_key(node).split(".")[1], _key(node).split(".")[1])
    decimals = arg(node, 1, "decimals", 0) if _key(node) == "aten.round.decimals" else 0
    if not decimals:
        return t.lower.unary(op, x)
    scale = 10.0 ** decimals
    return t.lower.binary("div", t.lower.unary(op, t.lower.binary("mul", x, scale)), scale)


@handles("aten.frac.default")
def _frac(t, node):
    x = t.tensor(node.args[0])
    return t.lower.binary("sub", x, t.lower.unary("trunc", x))


UNARY_FLOAT = {"aten.expm1.default": "expm1", "aten.log1p.default": "log1p",
               "aten.tan.default": "tan", "aten.atan.default": "atan",
               "aten.arctan.default": "atan"}


@handles(*UNARY_FLOAT)
def _unary_float(t, node):
    x = t.lower.cast(t.tensor(node.args[0]), t.dtype(node))
    return t.lower.unary(UNARY_FLOAT[_key(node)], x)


@handles("aten.exp2.default", "aten.log2.default", "aten.log10.default")
def _other_bases(t, node):
    x = t.lower.cast(t.tensor(node.args[0]), t.dtype(node))
    key = _key(node)
    if key == "aten.exp2.default":
        return t.lower.unary("exp", t.lower.binary("mul", x, math.log(2.0)))
    base = 2.0 if key == "aten.log2.default" else 10.0
    return t.lower.binary("mul", t.lower.unary("log", x), 1.0 / math.log(base))


@handles("aten.reciprocal.default", "aten.square.default")
def _reciprocal_square(t, node):
    x = t.lower.cast(t.tensor(node.args[0]), t.dtype(node))
    if _key(node) == "aten.square.default":
        return t.lower.binary("mul", x, x)
    return t.lower.binary("div", 1.0, x)


@handles("aten.hypot.default")
def _hypot(t, node):
    a, b = t.tensor(node.args[0]), t.tensor(node.args[1])
    return t.lower.unary("sqrt", t.lower.binary("add", t.lower.binary("mul", a, a),
                                                t.lower.binary("mul", b, b)))


@handles("aten.lerp.Scalar", "aten.lerp.Tensor")
def _lerp(t, node):
    """start + weight * (end - start)."""
    start, end = t.tensor(node.args[0]), t.tensor(node.args[1])
    weight = t.operand(node.args[2])
    return t.lower.binary("add", start, t.lower.binary("mul", t.lower.binary("sub", end, start),
                                                       weight))


@handles("aten.clamp.Tensor", "aten.clip.Tensor")
def _clamp_tensor(t, node):
    x = t.tensor(node.args[0])
    low, high = arg(node, 1, "min"), arg(node, 2, "max")
    if low is not None:
        x = t.lower.binary("maximum", x, t.operand(low))
    if high is not None:
        x = t.lower.binary("minimum", x, t.operand(high))
    return x


@handles("aten.outer.default", "aten.ger.default")
def _outer(t, node):
    a, b = t.tensor(node.args[0]), t.tensor(node.args[1])
    (n,), (m,) = a.source_shape, b.source_shape
    return t.lower.binary("mul", t.lower.reshape(a, (n, Dim.of(1))),
                          t.lower.reshape(b, (Dim.of(1), m)))


# -- tests and masks --------------------------------------------------------------------------

@handles("aten.logical_xor.default", "aten.bitwise_xor.Tensor")
def _xor(t, node):
    a, b = (t.lower.cast(t.lower.truth(t.tensor(v)), "int32") for v in node.args[:2])
    if t.dtype(node) != "bool":
        raise AitError("bitwise xor of integers is not supported")
    return t.lower.binary("not_equal", a, b)


@handles("aten.isinf.default", "aten.isposinf.default", "aten.isneginf.default",
         "aten.isnan.default", "aten.isfinite.default", "aten.signbit.default")
def _tests(t, node):
    x, test = t.tensor(node.args[0]), _key(node).split(".")[1]
    if test == "isnan":
        return t.lower.binary("not_equal", x, x)
    if test == "signbit":  # -0.0 reads as not negative here
        return t.lower.binary("less", x, 0)
    if test == "isposinf":
        return t.lower.binary("equal", x, math.inf)
    if test == "isneginf":
        return t.lower.binary("equal", x, -math.inf)
    magnitude = t.lower.unary("abs", x)
    if test == "isinf":
        return t.lower.binary("equal", magnitude, math.inf)
    return t.lower.binary("less", magnitude, math.inf)  # isfinite: NaN compares false


@handles("aten.nan_to_num.default")
def _nan_to_num(t, node):
    return act.nan_to_num(t.lower, t.tensor(node.args[0]), float(arg(node, 1, "nan", 0.0) or 0.0),
                          arg(node, 2, "posinf"), arg(node, 3, "neginf"))


@handles("aten.tril.default", "aten.triu.default")
def _tri(t, node):
    return act.tri(t.lower, t.tensor(node.args[0]), int(arg(node, 1, "diagonal", 0)),
                   upper="triu" in _key(node))


@handles("aten.one_hot.default")
def _one_hot(t, node):
    """F.one_hot: ids compared with 0..num_classes-1 along a new last axis, as int64."""
    ids = t.tensor(node.args[0])
    classes = arg(node, 1, "num_classes", -1)
    if classes is None or classes < 0:
        raise AitError("one_hot without num_classes (the count would come from the values)")
    table = t.lower.iota((Dim.of(classes),), ids.dtype)
    spread = t.lower.reshape(ids, tuple(ids.source_shape) + (Dim.of(1),))
    return t.lower.cast(t.lower.binary("equal", spread, table), "int64")
