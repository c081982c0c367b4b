"""Convolution and pooling over NHWC activations. Conv weights keep PyTorch's OIHW layout
([out, in/groups, kh, kw]) so a torchvision state_dict loads unchanged; the layout pass re-lays
them out for kernels."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ait_build.errors import OpError
from ait_build.ir.dims import Dim
from ait_build.ops.epilogue import EPILOGUE_ATTRS, apply_epilogue, check_residual
from ait_build.ops.opdef import (Attr, OpDef, ParamSpec, TType, pair, register, require_float,
                                 require_positive, require_rank, require_static)



def _window_attrs(stride_default, stride_doc):
    return (
        Attr("kernel", "pair", doc="window size: int or [kh, kw]"),
        Attr("stride", "pair", stride_default, doc=stride_doc),
        Attr("padding", "pair", 0, doc="zero padding on each side: int or [ph, pw]"),
        Attr("dilation", "pair", 1, doc="spacing between window taps: int or [dh, dw]"),
    )


CONV_WINDOW_ATTRS = _window_attrs(1, "int or [sh, sw]")
# PyTorch's pools default the stride to the kernel size (nn.MaxPool2d(2) halves the image)
POOL_WINDOW_ATTRS = _window_attrs(None, "int or [sh, sw]; default: the kernel size, as in PyTorch")
CEIL_MODE = Attr("ceil_mode", "bool", False,
                 doc="round the output size up: a last, partial window where the stride leaves "
                     "one (it must start inside the input or the leading padding)")


def window_params(attrs) -> tuple:
    """((kh, kw), (sh, sw), (ph, pw), (dh, dw)) with the pools' stride default resolved."""
    kernel = pair(attrs["kernel"])
    stride = kernel if attrs.get("stride") is None else pair(attrs["stride"])
    return kernel, stride, pair(attrs.get("padding", 0)), pair(attrs.get("dilation", 1))


def out_count(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool = False) -> int:
    """Windows along one axis, PyTorch's rule: with ceil_mode a partial last window counts when
    it starts inside the input or its leading padding."""
    span = d * (k - 1) + 1
    if not ceil_mode:
        return (n + 2 * p - span) // s + 1
    out = -(-(n + 2 * p - span) // s) + 1
    return out - 1 if (out - 1) * s >= n + p else out


def out_size(size: Dim, k: int, s: int, p: int, d: int, what: str, ceil_mode=False) -> Dim:
    n = require_static(size, f"{what} input height/width")
    span = d * (k - 1) + 1
    if n + 2 * p < span:
        raise OpError(f"{what} window {k} (dilation {d}) is larger than the padded input {n + 2 * p}")
    return Dim.of(out_count(n, k, s, p, d, ceil_mode))


def window_shape(attrs, x: TType, channels, what: str) -> tuple:
    """The NHWC output shape; `channels` None keeps the input's."""
    require_rank(x, 4, f"{what} input (NHWC)")
    require_float(x, f"{what} input")
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window_params(attrs)
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        raise OpError("kernel, stride and dilation must be >= 1 and padding >= 0")
    n, h, w, c = x.shape
    ceil = bool(attrs.get("ceil_mode"))
    return (n, out_size(h, kh, sh, ph, dh, what, ceil), out_size(w, kw, sw, pw, dw, what, ceil),
            c if channels is None else channels)


def windows(x, attrs, pad_value=0.0):
    """A [N, Ho, Wo, KH, KW, C] strided view of the padded input (padded further at the end
    for ceil_mode's partial windows)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window_params(attrs)
    ceil = bool(attrs.get("ceil_mode"))
    _, h, w, _ = x.shape
    ho, wo = out_count(h, kh, sh, ph, dh, ceil), out_count(w, kw, sw, pw, dw, ceil)
    eh = max(0, (ho - 1) * sh + dh * (kh - 1) + 1 - (h + 2 * ph))
    ew = max(0, (wo - 1) * sw + dw * (kw - 1) + 1 - (w + 2 * pw))
    xp = np.pad(x, ((0, 0), (ph, ph + eh), (pw, pw + ew), (0, 0)), constant_values=pad_value)
    n, _, _, c = xp.shape
    s0, s1, s2, s3 = xp.strides
    return as_strided(xp, (n, ho, wo, kh, kw, c), (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3),
                      writeable=False)


# -- conv2d -----------------------------------------------------------------------------------

def _conv_channels(attrs, x: TType):
    c = require_static(x.shape[3], "conv2d input channels")
    g, o = attrs["groups"], attrs["out_channels"]
    require_positive(attrs, "out_channels", "groups")
    if c % g or o % g:
        raise OpError(f"groups={g} must divide in_channels={c} and out_channels={o}")
    return c, g, o


def _conv_infer(attrs, inputs):
    x = inputs[0]
    shape = window_shape(attrs, x, Dim.of(attrs["out_channels"]), "conv2d")  # checks rank first
    _conv_channels(attrs, x)
    check_residual(shape, inputs[1] if len(inputs) > 1 else None, "conv2d", x.dtype)
    return [TType(shape, x.dtype)]


def _conv_params(attrs, inputs):
    c, g, o = _conv_channels(attrs, inputs[0])
    kh, kw = pair(attrs["kernel"])
    params = {"weight": ParamSpec((Dim.of(o), Dim.of(c // g), Dim.of(kh), Dim.of(kw)),
                                  f"fan_in:{c // g * kh * kw}")}
    if attrs["bias"]:
        params["bias"] = ParamSpec((Dim.of(o),), f"bias:{c // g * kh * kw}")
    return params


def conv2d_nhwc(x, w, attrs):
    """Reference conv: x [N,H,W,C], w [O, C/g, KH, KW] -> [N,Ho,Wo,O]."""
    g = attrs["groups"]
    win = windows(x, attrs)
    n, ho, wo, kh, kw, c = win.shape
    o = w.shape[0]
    if g == 1:
        cols = win.reshape(n * ho * wo, kh * kw * c)
        return (cols @ w.transpose(2, 3, 1, 0).reshape(kh * kw * c, o)).reshape(n, ho, wo, o)
    win = win.reshape(n, ho, wo, kh, kw, g, c // g)
    wg = w.reshape(g, o // g, c // g, kh, kw)
    out = np.einsum("nhwijgc,gocij->nhwgo", win, wg, optimize=True)
    return np.ascontiguousarray(out.reshape(n, ho, wo, o))


def _conv_reference(attrs, xs, ws):
    acc = conv2d_nhwc(xs[0], ws["weight"], attrs)
    return [apply_epilogue(acc, attrs, ws.get("bias"), xs[1] if len(xs) > 1 else None)]


register(OpDef(
    name="conv2d", category="conv",
    doc="2-D convolution, NHWC input, PyTorch OIHW weight; optional fused epilogue",
    inputs=("x", "residual?"),
    attrs=(Attr("out_channels", "int", doc="O"),) + CONV_WINDOW_ATTRS
    + (Attr("groups", "int", 1, doc="in_channels for depthwise"),
       Attr("bias", "bool", True, doc="owns a `bias` weight"))
    + EPILOGUE_ATTRS,
    weight_shapes=(("weight", "[out_channels, in_channels / groups, kh, kw]"),
                   ("bias", "[out_channels] (with bias: true)")),
    notes="torch.nn.functional.conv2d with the activations permuted to NHWC "
          "(x.permute(0, 2, 3, 1)); zero padding only (no padding modes, no 'same').",
    infer=_conv_infer, params=_conv_params, reference=_conv_reference))


# -- pooling ----------------------------------------------------------------------------------

def _pool_infer(what):
    def infer(attrs, inputs):
        x = inputs[0]
        shape = window_shape(attrs, x, None, what)
        (kh, kw), _, (ph, pw), _ = window_params(attrs)
        if ph * 2 > kh or pw * 2 > kw:  # PyTorch's rule; more padding would make empty windows
            raise OpError(f"padding {attrs['padding']} must be at most half the kernel {attrs['kernel']}")
        if attrs["ceil_mode"] and attrs.get("count_include_pad") and (ph or pw):
            # PyTorch counts the padding but not what lies past it: write the pad out instead
            raise OpError("ceil_mode with count_include_pad needs padding 0 (pad the input with "
                          "a pad node first)")
        return [TType(shape, x.dtype)]
    return infer


register(OpDef(
    name="max_pool2d", category="pool", doc="max over windows (padding never wins)",
    attrs=POOL_WINDOW_ATTRS + (CEIL_MODE,), infer=_pool_infer("max_pool2d"),
    notes="torch.nn.functional.max_pool2d on NHWC; no return_indices.",
    reference=lambda attrs, xs, ws: [windows(xs[0], attrs, -np.inf).max(axis=(3, 4))]))


def _avg_pool_reference(attrs, xs, ws):
    total = windows(xs[0], attrs).sum(axis=(3, 4), dtype=np.float32)
    if attrs["count_include_pad"] and not attrs["ceil_mode"]:
        kh, kw = pair(attrs["kernel"])  # without ceil_mode no window reaches past the padding
        return [total / np.float32(kh * kw)]
    # the cells inside the input (ceil_mode with count_include_pad has no padding)
    ones = np.ones((1,) + xs[0].shape[1:3] + (1,), np.float32)
    return [total / windows(ones, attrs).sum(axis=(3, 4))]


register(OpDef(
    name="avg_pool2d", category="pool", doc="mean over windows",
    attrs=POOL_WINDOW_ATTRS[:3] + (Attr("count_include_pad", "bool", True,
                                        doc="divide by kh*kw even where the window covers padding"),
                                   CEIL_MODE),
    infer=_pool_infer("avg_pool2d"), reference=_avg_pool_reference,
    notes="torch.nn.functional.avg_pool2d on NHWC; no divisor_override. With ceil_mode and "
          "count_include_pad, padding must be 0 (a partial window divides by the cells it "
          "covers, as in PyTorch)."))


def _gap_infer(attrs, inputs):
    x = inputs[0]
    require_rank(x, 4, "global_avg_pool input (NHWC)")
    require_float(x, "global_avg_pool input")
    n, _, _, c = x.shape
    one = Dim.of(1)
    return [TType((n, one, one, c) if attrs["keepdims"] else (n, c), x.dtype)]


register(OpDef(
    name="global_avg_pool", category="pool", doc="mean over H and W: [N,H,W,C] -> [N,C]",
    attrs=(Attr("keepdims", "bool", False, doc="keep H and W as size 1: [N,1,1,C]"),),
    infer=_gap_infer,
    notes="adaptive_avg_pool2d(x, 1) followed by flatten, on NHWC.",
    # summed in float64: the oracle must be more exact than the kernels (a float32 sum over a
    # 112x112 map is off by ~4e-6, 25x PyTorch's pairwise sum)
    reference=lambda attrs, xs, ws: [xs[0].mean(axis=(1, 2), keepdims=attrs["keepdims"],
                                                dtype=np.float64).astype(np.float32)]))
