"""Multi-head self-attention on projected q, k, v: softmax(q k^T * scale + bias) v per head.

Inputs are [batch, seq, heads*head_dim] (or one packed [batch, seq, 3*heads*head_dim] tensor with
`packed: true`), plus an optional additive bias broadcastable to [batch, heads, seq_q, seq_k]
(a padding mask turned into 0 / -10000, as BERT does).
"""

from __future__ import annotations

import math

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim, shape_str
from ait_build.ops.norm import softmax
from ait_build.ops.opdef import (Attr, OpDef, TType, broadcasts_to, register, require_float,
                                 require_static, same_float_dtype)


def _split_inputs(attrs, inputs):
    """(q, k, v, bias) from the input list, for both packed and separate forms."""
    n = 1 if attrs["packed"] else 3
    if len(inputs) not in (n, n + 1):
        hint = " (set 'packed: true' for one qkv input)" if n == 3 and len(inputs) < 3 else ""
        raise OpError(f"expects {n} input(s) and an optional bias, got {len(inputs)}{hint}")
    bias = inputs[n] if len(inputs) == n + 1 else None
    return inputs[:n], bias


def _mha_infer(attrs, inputs):
    qkv, bias = _split_inputs(attrs, inputs)
    h, d = attrs["num_heads"], attrs["head_dim"]
    if h < 1 or d < 1:
        raise OpError("num_heads and head_dim must be >= 1")
    width = h * d * (3 if attrs["packed"] else 1)
    for t in qkv:
        if len(t.shape) != 3:
            raise OpError(f"attention inputs must be [batch, seq, features], got {shape_str(t.shape)}")
        if require_static(t.shape[2], "attention feature dim") != width:
            raise OpError(f"attention input {shape_str(t.shape)} has {t.shape[2]} features; "
                          f"num_heads*head_dim{'*3' if attrs['packed'] else ''} = {width}")
    q = qkv[0]
    if not attrs["packed"]:
        k, v = qkv[1], qkv[2]
        if k.shape != v.shape or k.shape[0] != q.shape[0]:
            raise OpError(f"k {shape_str(k.shape)} and v {shape_str(v.shape)} must match and share "
                          f"q's batch {q.shape[0]}")
        seq_k = k.shape[1]
    else:
        seq_k = q.shape[1]
    if attrs["causal"] and seq_k != q.shape[1]:  # top-left vs bottom-right alignment would differ
        raise OpError(f"causal attention needs seq_q == seq_k, got {q.shape[1]} and {seq_k}")
    period = attrs.get("bias_period", 0)
    if period and (bias is None or len(bias.shape) != 4 or bias.shape[0] != period):
        raise OpError(f"bias_period {period} needs a [{period}, heads or 1, seq_q or 1, seq_k] bias")
    if bias is not None:
        scores = (Dim.of(period) if period else q.shape[0], h, q.shape[1], seq_k)
        if not broadcasts_to(bias.shape, scores):
            raise OpError(f"attention bias {shape_str(bias.shape)} does not broadcast to "
                          f"[batch, heads, seq_q, seq_k] = {shape_str(scores)}")
    dtype = same_float_dtype(list(qkv) + ([bias] if bias is not None else []))
    require_float(q, "attention input")
    return [TType((q.shape[0], q.shape[1], Dim.of(h * d)), dtype)]


def attention_scale(attrs) -> float:
    return attrs["scale"] if attrs["scale"] is not None else 1.0 / math.sqrt(attrs["head_dim"])


def _mha_reference(attrs, xs, ws):
    qkv, bias = _split_inputs(attrs, xs)
    h, d = attrs["num_heads"], attrs["head_dim"]
    q, k, v = np.split(qkv[0], 3, axis=-1) if attrs["packed"] else qkv

    def heads(t):  # [b, s, h*d] -> [b, h, s, d]
        return t.reshape(t.shape[0], t.shape[1], h, d).transpose(0, 2, 1, 3)

    scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) * np.float32(attention_scale(attrs))
    if bias is not None:
        if attrs.get("bias_period"):  # batch b reads bias[b % period]
            bias = bias[np.arange(scores.shape[0]) % attrs["bias_period"]]
        scores = scores + bias
    if attrs["causal"]:
        sq, sk = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((sq, sk), bool)), scores, -np.inf)
    out = softmax(scores, -1) @ heads(v)
    b, _, s, _ = out.shape
    return [np.ascontiguousarray(out.transpose(0, 2, 1, 3).reshape(b, s, h * d))]


register(OpDef(
    name="multi_head_attention", category="attention",
    doc="softmax(q k^T * scale + bias) v over heads; q, k, v are [batch, seq, heads*head_dim] "
        "(packed: inputs are qkv and the optional bias)",
    inputs=("q", "k?", "v?", "bias?"),
    attrs=(Attr("num_heads", "int", doc="h"), Attr("head_dim", "int", doc="d; features = h * d"),
           Attr("scale", "number_or_none", None, doc="default 1/sqrt(head_dim)"),
           Attr("causal", "bool", False, doc="query i sees keys 0..i; needs seq_q == seq_k"),
           Attr("packed", "bool", False,
                                                doc="one [batch, seq, 3*heads*head_dim] input"),
           Attr("bias_period", "int", 0,
                doc="when > 0, batch b adds bias[b % bias_period] (Swin's shifted windows: the "
                    "batch is images x windows, the mask is per window)")),
    notes="torch.nn.functional.scaled_dot_product_attention with heads folded into the feature "
          "dim ([b, s, h*d] <-> [b, h, s, d]); the bias is an additive float mask (attn_mask); "
          "`causal` is is_causal (top-left, so seq_q must equal seq_k). Packed inputs are "
          "[q | k | v] along features, as nn.MultiheadAttention's in_proj.",
    infer=_mha_infer, reference=_mha_reference))


def rotate_half(x):
    """concat(-x[..., d/2:], x[..., :d/2]): rotary embedding's partner of each feature."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def _rotary_infer(attrs, inputs):
    x, cos, sin = inputs
    require_float(x, "rotary_embedding's x")
    same_float_dtype(inputs)
    if not x.shape:
        raise OpError("rotary_embedding rotates the last dim: x needs at least one")
    d = require_static(x.shape[-1], "rotary_embedding's last dim")
    if d % 2:
        raise OpError(f"rotary_embedding rotates halves of the last dim, got {d} (odd)")
    for name, t in (("cos", cos), ("sin", sin)):
        if not broadcasts_to(t.shape, x.shape):
            raise OpError(f"rotary_embedding's {name} {shape_str(t.shape)} does not broadcast "
                          f"to x {shape_str(x.shape)}")
    return [x]


def _rotary_reference(attrs, xs, ws):
    x, cos, sin = (np.asarray(a, np.float32) for a in xs)
    return [x * cos + rotate_half(x) * sin]


register(OpDef(
    name="rotary_embedding", category="attention",
    doc="x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2]) "
        "along the last dim (d even, static); cos and sin broadcast to x",
    inputs=("x", "cos", "sin"),
    notes="LLaMA's, Mistral's, Qwen's and GPT-NeoX's rotary position embedding of q and k "
          "(transformers' apply_rotary_pos_emb), one elementwise pass; fuse_rotary makes it "
          "from the written-out slices, negation, concat, products and sum.",
    infer=_rotary_infer, reference=_rotary_reference))
