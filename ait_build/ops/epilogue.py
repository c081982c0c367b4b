"""The epilogue shared by conv2d, linear and matmul: out = act(acc + bias + residual).

Specs may write it directly (`activation: relu` and a residual as the last input); the epilogue
fusion pass writes it when it folds a following bias add, activation and residual add. The
activations are ops/elementwise.py's ACTIVATIONS plus `hardtanh`, a clamp whose bounds are the
`hardtanh_min`/`hardtanh_max` attributes (relu6, hardtanh and clamp ops fold into it), and
`leaky_relu` with its `leaky_slope`.
"""

from __future__ import annotations

from ait_build.errors import OpError
from ait_build.ir.dims import shape_str
from ait_build.ops.elementwise import ACTIVATIONS, clamp, leaky_relu
from ait_build.ops.opdef import Attr, broadcasts_to

EPILOGUE_ACTIVATIONS = tuple(ACTIVATIONS) + ("hardtanh", "leaky_relu")
EPILOGUE_ATTRS = (
    Attr("activation", "str", "none", EPILOGUE_ACTIVATIONS,
         doc="applied last: act(acc + bias + residual)"),
    Attr("hardtanh_min", "float", -1.0, doc="`activation: hardtanh`'s lower bound (may be -.inf)"),
    Attr("hardtanh_max", "float", 1.0, doc="`activation: hardtanh`'s upper bound (may be .inf)"),
    Attr("leaky_slope", "float", 0.01, doc="`activation: leaky_relu`'s slope below 0"),
)


def hardtanh_bounds(attrs) -> tuple:
    return attrs.get("hardtanh_min", -1.0), attrs.get("hardtanh_max", 1.0)


def activation(attrs):
    """The NumPy function of a GEMM-shaped node's epilogue activation."""
    act = attrs.get("activation", "none")
    if act == "hardtanh":
        low, high = hardtanh_bounds(attrs)
        return lambda x: clamp(x, low, high)
    if act == "leaky_relu":
        return lambda x: leaky_relu(x, attrs.get("leaky_slope", 0.01))
    return ACTIVATIONS[act]


def check_residual(out_shape, residual, what: str, dtype: str | None = None) -> None:
    """The residual must broadcast to the output without growing it (and share its dtype)."""
    if residual is None:
        return
    if dtype is not None and residual.dtype != dtype:
        raise OpError(f"residual is {residual.dtype} but the {what} output is {dtype} "
                      "(insert a cast)")
    if not broadcasts_to(residual.shape, out_shape):
        raise OpError(f"residual {shape_str(residual.shape)} does not match the {what} output "
                      f"{shape_str(out_shape)}")


def apply_epilogue(acc, attrs, bias=None, residual=None):
    if bias is not None:
        acc = acc + bias
    if residual is not None:
        acc = acc + residual
    return activation(attrs)(acc)
