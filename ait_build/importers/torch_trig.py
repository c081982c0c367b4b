"""ATen inverse trigonometric and hyperbolic functions, atan2, heaviside, cdist and bucketize /
searchsorted, as compositions of our ops (the elementwise forms in activations.py, shared with
the ONNX frontend). The table joins torch_ops.HANDLERS."""

from __future__ import annotations

import math

from ait_build.errors import AitError
from ait_build.importers import activations as act
from ait_build.importers.graph import registrar
from ait_build.importers.torch_args import arg
from ait_build.importers.torch_args import key as _key
from ait_build.ir.dims import Dim

HANDLERS: dict = {}
handles = registrar(HANDLERS)

# torch.export keeps the arc* spellings as their own ops
FUNCTIONS = {f"aten.{spelling}.default": name for name in act.INVERSE_AND_HYPERBOLIC
             for spelling in (name, "arc" + name[1:] if name.startswith("a") else name)}


@handles(*FUNCTIONS)
def _inverse_and_hyperbolic(t, node):
    """Integer inputs are computed in the result's float type, as PyTorch does."""
    x = t.lower.cast(t.tensor(node.args[0]), t.dtype(node))
    return act.INVERSE_AND_HYPERBOLIC[FUNCTIONS[_key(node)]](t.lower, x)


@handles("aten.atan2.default", "aten.arctan2.default")
def _atan2(t, node):
    """atan(y / x), plus pi (y >= 0) or minus pi (y < 0) where x < 0. x = 0 (-0 taken as +0)
    and y != 0 give y / 0 = +-inf and +-pi/2; y = 0 takes a quotient of 0, so atan2(0, 0) = 0
    and atan2(0, x < 0) = pi (the sign of a zero y is not read)."""
    dtype = t.dtype(node)
    y, x = (t.lower.cast(t.tensor(v), dtype) for v in node.args[:2])
    lw = t.lower
    x = lw.where_(lw.binary("equal", x, 0.0), 0.0, x)
    quotient = lw.where_(lw.binary("equal", y, 0.0), 0.0, lw.binary("div", y, x))
    angle = lw.unary("atan", quotient)
    turn = lw.where_(lw.binary("less", y, 0.0), -math.pi, math.pi)
    return lw.where_(lw.binary("less", x, 0.0), lw.binary("add", angle, turn), angle)


@handles("aten.heaviside.default")
def _heaviside(t, node):
    """`values` where x = 0, else 1 above 0 and 0 below (and at NaN, as PyTorch's x > 0)."""
    x, values = t.tensor(node.args[0]), t.operand(node.args[1])
    dtype = t.dtype(node)
    step = t.lower.cast(t.lower.binary("greater", x, 0), dtype)
    if not isinstance(values, (int, float)):
        values = t.lower.cast(values, dtype)
    return t.lower.where_(t.lower.binary("equal", x, 0), values, step)


@handles("aten.cdist.default", "aten._cdist_forward.default")
def _cdist(t, node):
    """The p-norm of every row of x1 [..., P, M] minus every row of x2 [..., R, M]: the
    differences broadcast to [..., P, R, M], then reduced over M. Exact for every compute_mode
    (PyTorch's matrix-product form, for more than 25 rows, is the less exact one); p = 0, 1, 2
    and inf."""
    a, b = t.tensor(node.args[0]), t.tensor(node.args[1])
    p = float(arg(node, 2, "p", 2.0))
    mode = arg(node, 3, "compute_mode")
    if mode not in (None, 0, 1, 2):  # ATen's codes of the three compute_mode strings
        raise AitError(f"cdist with compute_mode {mode!r}")
    if p not in (0.0, 1.0, 2.0, math.inf):
        raise AitError(f"cdist with p = {p} (only 0, 1, 2 and inf)")
    one = Dim.of(1)
    rows = t.lower.reshape(a, tuple(a.source_shape[:-1]) + (one, a.source_shape[-1]))
    cols = t.lower.reshape(b, tuple(b.source_shape[:-2]) + (one,) + tuple(b.source_shape[-2:]))
    diff = t.lower.binary("sub", rows, cols)
    if p == 0.0:
        return t.lower.sum(t.lower.cast(t.lower.binary("not_equal", diff, 0.0), diff.dtype),
                           [-1], False)
    if p == math.inf:
        return t.lower.max(t.lower.unary("abs", diff), [-1], False)
    return t.lower.vector_norm(diff, int(p), [-1], False)


@handles("aten.bucketize.Tensor", "aten.searchsorted.Tensor")
def _bucketize(t, node):
    """The number of boundaries below x (with right: not above x), over a 1-d sorted tensor of
    boundaries: x compared with every boundary along a new last axis, then counted. Written as
    not (b >= x) (not (b > x)), PyTorch's binary-search test, so NaN counts every boundary."""
    if _key(node) == "aten.bucketize.Tensor":
        x, bounds = t.tensor(node.args[0]), t.tensor(node.args[1])
        right = bool(arg(node, 3, "right", False))
    else:
        bounds, x = t.tensor(node.args[0]), t.tensor(node.args[1])
        right = bool(arg(node, 3, "right", False)) or arg(node, 4, "side") == "right"
        if arg(node, 5, "sorter") is not None:
            raise AitError("searchsorted with a sorter")
    if bounds.rank != 1:
        raise AitError(f"bucketize/searchsorted over {bounds.rank}-d boundaries (only 1-d)")
    spread = t.lower.reshape(x, tuple(x.source_shape) + (Dim.of(1),))
    inside = t.lower.binary("greater" if right else "greater_equal", bounds, spread)
    below = t.lower.cast(t.lower.unary("logical_not", inside), "float32")
    return t.lower.cast(t.lower.sum(below, [-1], False), t.dtype(node))
