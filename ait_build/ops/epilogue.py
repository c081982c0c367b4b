"""The epilogue shared by conv2d, linear and matmul: out = act(acc + bias + residual).

Specs may write it directly (`activation: relu` and a residual as the last input); the epilogue
fusion pass writes it when it folds a following bias add, activation and residual add.
"""

from __future__ import annotations

from ait_build.errors import OpError
from ait_build.ir.dims import shape_str
from ait_build.ops.elementwise import ACTIVATIONS
from ait_build.ops.opdef import Attr, broadcasts_to

EPILOGUE_ATTRS = (
    Attr("activation", "str", "none", tuple(ACTIVATIONS),
         doc="applied last: act(acc + bias + residual)"),
)


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
    return ACTIVATIONS[attrs.get("activation", "none")](acc)
