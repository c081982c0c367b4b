"""GEMM-shaped ops: linear (PyTorch nn.Linear weights) and batched matmul, both with the shared
epilogue (bias, activation, residual), and grouped_matmul (a mixture of experts' rows, each group
by its own matrix)."""

from __future__ import annotations

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim, shape_str
from ait_build.ops.epilogue import EPILOGUE_ATTRS, apply_epilogue, check_residual
from ait_build.ops.opdef import (Attr, OpDef, ParamSpec, TType, broadcast_shapes, register,
                                 require_float, require_positive, require_static, same_float_dtype)


def _linear_infer(attrs, inputs):
    x = inputs[0]
    if len(x.shape) < 1:
        raise OpError("linear input must have rank >= 1")
    require_float(x, "linear input")
    require_positive(attrs, "out_features")
    require_static(x.shape[-1], "linear input features (last dim)")
    shape = tuple(x.shape[:-1]) + (Dim.of(attrs["out_features"]),)
    check_residual(shape, inputs[1] if len(inputs) > 1 else None, "linear", x.dtype)
    return [TType(shape, x.dtype)]


def _linear_params(attrs, inputs):
    k = require_static(inputs[0].shape[-1], "linear input features")
    n = attrs["out_features"]
    shape = (Dim.of(k), Dim.of(n)) if attrs["weight_layout"] == "in_out" else (Dim.of(n), Dim.of(k))
    params = {"weight": ParamSpec(shape, f"fan_in:{k}")}
    if attrs["bias"]:
        params["bias"] = ParamSpec((Dim.of(n),), f"bias:{k}")
    return params


def _linear_reference(attrs, xs, ws):
    weight = ws["weight"]
    acc = xs[0] @ (weight if attrs["weight_layout"] == "in_out" else weight.T)
    return [apply_epilogue(acc, attrs, ws.get("bias"), xs[1] if len(xs) > 1 else None)]


register(OpDef(
    name="linear", category="gemm",
    doc="x @ weight.T + bias over the last dim; weight is [out_features, in_features]",
    inputs=("x", "residual?"),
    attrs=(Attr("out_features", "int", doc="N"),
           Attr("bias", "bool", True, doc="owns a `bias` weight"),
           Attr("weight_layout", "str", "out_in", ("out_in", "in_out"),
                doc="`in_out`: the weight is stored [in_features, out_features] (GPT-2's "
                    "Conv1D), out = x @ weight + bias")) + EPILOGUE_ATTRS,
    weight_shapes=(("weight", "[out_features, in_features] ([in, out] with weight_layout: in_out)"),
                   ("bias", "[out_features] (with bias: true)")),
    notes="torch.nn.functional.linear; the epilogue adds the residual before the activation. "
          "`weight_layout: in_out` is transformers' Conv1D (torch.addmm(bias, x, weight)); each "
          "backend lays the weight out for its GEMM when it writes the weights.",
    infer=_linear_infer, params=_linear_params, reference=_linear_reference))


MATMUL_ATTRS = (Attr("transpose_b", "bool", False, doc="use b's last two dims swapped"),
                Attr("alpha", "float", 1.0, doc="scales the product before the epilogue")) \
    + EPILOGUE_ATTRS


def _matmul_infer(attrs, inputs):
    a, b = inputs[0], inputs[1]
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise OpError(f"matmul needs rank >= 2 inputs, got {shape_str(a.shape)} and {shape_str(b.shape)}")
    dtype = same_float_dtype(inputs[:2])
    require_float(a, "matmul input")
    m, k = a.shape[-2:]
    kb, n = (b.shape[-1], b.shape[-2]) if attrs["transpose_b"] else (b.shape[-2], b.shape[-1])
    if k != kb:
        raise OpError(f"matmul inner dims differ: {shape_str(a.shape)} @ {shape_str(b.shape)}"
                      + (" (transposed)" if attrs["transpose_b"] else ""))
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    shape = tuple(batch) + (m, n)
    check_residual(shape, inputs[2] if len(inputs) > 2 else None, "matmul", dtype)
    return [TType(shape, dtype)]


def _matmul_reference(attrs, xs, ws):
    b = np.swapaxes(xs[1], -1, -2) if attrs["transpose_b"] else xs[1]
    acc = np.matmul(xs[0], b)
    if attrs["alpha"] != 1.0:
        acc = acc * np.float32(attrs["alpha"])
    return [apply_epilogue(acc, attrs, None, xs[2] if len(xs) > 2 else None)]


register(OpDef(
    name="matmul", category="gemm",
    doc="batched a @ b with NumPy broadcasting over leading dims; both ranks >= 2",
    inputs=("a", "b", "residual?"),
    attrs=MATMUL_ATTRS, infer=_matmul_infer, reference=_matmul_reference,
    notes="torch.matmul for float tensors of rank >= 2 (1-D operands are not promoted)."))


def _bmm_infer(attrs, inputs):
    for t in inputs[:2]:
        if len(t.shape) != 3:
            raise OpError(f"bmm needs rank-3 inputs [batch, m, k], got {shape_str(t.shape)}")
    if inputs[0].shape[0] != inputs[1].shape[0]:  # torch.bmm does not broadcast; use matmul
        raise OpError(f"bmm batch dims differ: {inputs[0].shape[0]} and {inputs[1].shape[0]} "
                      "(matmul broadcasts)")
    return _matmul_infer(attrs, inputs)


register(OpDef(
    name="bmm", category="gemm", doc="batched matmul of rank-3 tensors: [b,m,k] @ [b,k,n]",
    inputs=("a", "b", "residual?"),
    attrs=MATMUL_ATTRS, infer=_bmm_infer, reference=_matmul_reference,
    notes="torch.bmm: equal batch sizes, no broadcasting."))


def _grouped_matmul_infer(attrs, inputs):
    a, b, offsets = inputs
    if len(a.shape) != 2 or len(b.shape) != 3 or len(offsets.shape) != 1:
        raise OpError(f"grouped_matmul takes a [rows, k], b [groups, k, n] and offsets [groups], "
                      f"got {shape_str(a.shape)}, {shape_str(b.shape)}, {shape_str(offsets.shape)}")
    dtype = same_float_dtype(inputs[:2])
    require_float(a, "grouped_matmul input")
    if offsets.dtype not in ("int32", "int64"):
        raise OpError(f"grouped_matmul offsets must be int32 or int64, got {offsets.dtype}")
    kb, n = (b.shape[2], b.shape[1]) if attrs["transpose_b"] else (b.shape[1], b.shape[2])
    if a.shape[1] != kb or offsets.shape[0] != b.shape[0]:
        raise OpError(f"grouped_matmul of {shape_str(a.shape)} by {shape_str(b.shape)}"
                      + (" (transposed)" if attrs["transpose_b"] else "")
                      + f" with offsets {shape_str(offsets.shape)}: k or the groups differ")
    return [TType((a.shape[0], n), dtype)]


def _grouped_matmul_reference(attrs, xs, ws):
    a, b, offsets = xs
    b = np.swapaxes(b, -1, -2) if attrs["transpose_b"] else b
    ends = offsets.astype(np.int64)
    if np.any(np.diff(ends) < 0) or (ends.size and (ends[0] < 0 or ends[-1] > a.shape[0])):
        raise OpError(f"grouped_matmul offsets must rise from 0 to at most {a.shape[0]} rows, "
                      f"got {ends.tolist()}")
    out = np.zeros((a.shape[0], b.shape[2]), np.float32)
    for group, (start, end) in enumerate(zip(np.concatenate([[0], ends[:-1]]), ends)):
        out[start:end] = np.matmul(a[start:end].astype(np.float32), b[group].astype(np.float32))
    return [out]


register(OpDef(
    name="grouped_matmul", category="gemm",
    doc="rows offsets[g-1]..offsets[g] of a (offsets[-1] = 0) times b[g], for each group g: a "
        "mixture of experts' rows sorted by expert; rows past the last offset are zero",
    inputs=("a", "b", "offsets"),
    attrs=(Attr("transpose_b", "bool", False, doc="b is [groups, n, k]"),),
    infer=_grouped_matmul_infer, reference=_grouped_matmul_reference,
    notes="torch._grouped_mm(a, b, offs=offsets) and transformers' grouped_mm fallback (offsets: "
          "the cumulative rows per group, rising, at most the rows). The kernels run what the "
          "offsets give: each group from where the ones before it ended, so groups never "
          "overlap; the reference refuses falling offsets."))
