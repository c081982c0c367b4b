"""Normalization: batch_norm (inference, channels last), layer_norm and rms_norm (last dim,
optional fused residual add), softmax."""

from __future__ import annotations

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim, shape_str
from ait_build.ops.opdef import (Attr, OpDef, ParamSpec, TType, norm_axis, register, require_float,
                                 require_static, same_float_dtype)


def _bn_infer(attrs, inputs):
    x = inputs[0]
    if len(x.shape) < 2:  # PyTorch's batch_norm also wants [N, ..., C] (it puts C second)
        raise OpError(f"batch_norm input must have rank >= 2, got {shape_str(x.shape)}")
    require_float(x, "batch_norm input")
    require_static(x.shape[-1], "batch_norm channels (last dim)")
    return [x]


def _bn_params(attrs, inputs):
    c = Dim.of(require_static(inputs[0].shape[-1], "batch_norm channels (last dim)"))
    return {"weight": ParamSpec((c,), "ones"), "bias": ParamSpec((c,), "small"),
            "running_mean": ParamSpec((c,), "small"), "running_var": ParamSpec((c,), "variance")}


def _bn_reference(attrs, xs, ws):
    scale = ws["weight"] / np.sqrt(ws["running_var"] + np.float32(attrs["eps"]))
    return [(xs[0] - ws["running_mean"]) * scale + ws["bias"]]


register(OpDef(
    name="batch_norm", category="norm",
    doc="inference batch norm with running statistics; channels are the LAST dim (NHWC)",
    attrs=(Attr("eps", "epsilon", 1e-5, doc="added to the running variance"),),
    weight_shapes=tuple((role, "[channels]") for role in ("weight", "bias", "running_mean",
                                                           "running_var")),
    notes="torch.nn.functional.batch_norm(training=False), but channels are the last dim "
          "(PyTorch: dim 1).",
    infer=_bn_infer, params=_bn_params, reference=_bn_reference))


def _row_norm_infer(op: str):
    """The shape rule of a norm over the last dim with an optional residual, its errors naming
    `op`."""
    def infer(attrs, inputs):
        x = inputs[0]
        if len(x.shape) < 1:
            raise OpError(f"{op} needs rank >= 1")
        require_float(x, f"{op} input")
        require_static(x.shape[-1], f"{op} normalized (last) dim")
        if len(inputs) > 1 and tuple(inputs[1].shape) != tuple(x.shape):
            raise OpError(f"{op} residual {shape_str(inputs[1].shape)} differs from input "
                          f"{shape_str(x.shape)}")
        return [TType(x.shape, same_float_dtype(inputs))]
    return infer


def _ln_params(attrs, inputs):
    c = Dim.of(require_static(inputs[0].shape[-1], "layer_norm normalized dim"))
    if not attrs["affine"]:
        return {}
    return {"weight": ParamSpec((c,), "ones"), "bias": ParamSpec((c,), "small")}


def layer_norm(x, eps, weight=None, bias=None):
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float64)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = ((x - mean) / np.sqrt(var + eps)).astype(np.float32)
    if weight is not None:
        y = y * weight + bias
    return y


register(OpDef(
    name="layer_norm", category="norm",
    doc="normalizes over the last dim; with a second input, normalizes (x + residual)",
    inputs=("x", "residual?"),
    attrs=(Attr("eps", "epsilon", 1e-5, doc="added to the variance"),
           Attr("affine", "bool", True, doc="scale by `weight` and add `bias`")),
    infer=_row_norm_infer("layer_norm"), params=_ln_params,
    weight_shapes=(("weight", "[last dim] (with affine: true)"),
                   ("bias", "[last dim] (with affine: true)")),
    notes="torch.nn.functional.layer_norm with normalized_shape = the last dim only.",
    reference=lambda attrs, xs, ws: [layer_norm(xs[0] + xs[1] if len(xs) > 1 else xs[0],
                                                attrs["eps"], ws.get("weight"), ws.get("bias"))]))


def _rms_params(attrs, inputs):
    c = Dim.of(require_static(inputs[0].shape[-1], "rms_norm normalized dim"))
    return {"weight": ParamSpec((c,), "ones")} if attrs["affine"] else {}


def rms_norm(x, eps, weight=None):
    mean_square = (x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True)
    y = (x / np.sqrt(mean_square + eps)).astype(np.float32)
    return y * weight if weight is not None else y


register(OpDef(
    name="rms_norm", category="norm",
    doc="x / sqrt(mean(x^2) + eps) over the last dim, times `weight` (T5, LLaMA); with a second "
        "input, of (x + residual)",
    inputs=("x", "residual?"),
    attrs=(Attr("eps", "epsilon", 1e-6, doc="added to the mean of the squares"),
           Attr("affine", "bool", True, doc="scale by `weight`")),
    infer=_row_norm_infer("rms_norm"), params=_rms_params,
    weight_shapes=(("weight", "[last dim] (with affine: true)"),),
    notes="torch.nn.functional.rms_norm with normalized_shape = the last dim only; the "
          "statistics in float32 whatever the storage (as T5's and LLaMA's norms compute them).",
    reference=lambda attrs, xs, ws: [rms_norm(xs[0] + xs[1] if len(xs) > 1 else xs[0],
                                              attrs["eps"], ws.get("weight"))]))


def softmax(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_infer(attrs, inputs):
    require_float(inputs[0], "softmax input")
    norm_axis(attrs["axis"], len(inputs[0].shape))
    return [inputs[0]]


register(OpDef(
    name="softmax", category="norm", doc="exp(x) / sum(exp(x)) along `axis`",
    attrs=(Attr("axis", "int", -1, doc="the dim that sums to 1"),), infer=_softmax_infer,
    notes="torch.softmax(x, dim=axis).",
    reference=lambda attrs, xs, ws: [softmax(xs[0], attrs["axis"])]))
