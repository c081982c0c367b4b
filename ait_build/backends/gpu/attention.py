"""GPU lowering of fused multi-head attention: softmax(scale * q k^T + bias [+ causal mask]) v
per (batch, head), never materializing the scores. The GPU layer's own kernel (the backend's
`attention` template) streams key tiles through the ordinary cores with an online softmax and
takes any shape; a backend may offer a faster kernel for the calls it can take (cuda: CUTLASS's
fused attention on tensor cores, backends/cuda/fmha.py)."""

from __future__ import annotations

from functools import partial
from typing import Callable

from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.elementwise import float_literal
from ait_build.codegen.kernel import io_params, make_kernel
from ait_build.codegen.op_geometry import attention_operands
from ait_build.errors import AitError
from ait_build.ir.dims import Dim
from ait_build.ops.attention import attention_scale

# head_dim is a compile-time constant of the attention kernel; each lane of 8 holds
# ceil(head_dim / 8) of q and of the output row in registers
MAX_HEAD_DIM = 256


def attention_lowering(tensor_cores: Callable | None = None) -> Callable:
    """The lowering a backend puts in its LOWER table. `tensor_cores(lw, ops, context)` (optional)
    returns (template, label, scratch bytes, bias) of the backend's faster kernel for the call,
    having added that kernel's context, or None where only the GPU layer's kernel can take it;
    `bias`, when not None, is the (pointer, [b, h, q, k] strides) the kernel reads the bias from
    instead of the bias tensor (a copy of a weight laid out for it)."""
    return partial(lower_attention, tensor_cores)


def lower_attention(tensor_cores, lw) -> None:
    node = lw.node
    attrs = node.attrs
    heads, hd = attrs["num_heads"], attrs["head_dim"]
    if hd > MAX_HEAD_DIM:
        raise AitError(f"{node.loc}: the {lw.plan.backend.name} attention kernel takes head_dim <= "
                       f"{MAX_HEAD_DIM}, '{node.name}' has {hd}")
    ops = attention_operands(lw)
    qv, kv, vv, bias, b, sq, sk = ops.q, ops.k, ops.v, ops.bias, ops.b, ops.sq, ops.sk
    ld, bias_strides = ops.ld, ops.bias_strides
    out = node.output
    params = io_params(lw, out, "q", "k", "v")
    params += [(f"const {lw.ctype(bias)}*", "bias")] if bias is not None else []
    params += [("int64_t", p) for p in ("B", "Sq", "Sk", "H", "ldq", "ldk", "ldv")]
    params += [("float", "scale")] + [("int64_t", f"bs{i}") for i in range(4)]
    context = dict(has_bias=bias is not None, causal=bool(attrs["causal"]), head_dim=hd,
                   ctype=lw.ctype(out))
    if attrs.get("bias_period"):  # batch b reads bias[b % period]
        context.update(bias_period=attrs["bias_period"])
    chosen = tensor_cores(lw, ops, context) if tensor_cores else None
    template, label, scratch, laid_out = chosen or (lw.template("attention"), "attention", 0, None)
    bias_var = lw.src(bias) if bias is not None else None
    if laid_out is not None:
        bias_var, bias_strides = laid_out
    kernel = make_kernel(label + ("_causal" if attrs["causal"] else ""), node.op, template,
                         context, params)
    args = [lw.dst(out), qv, kv, vv] + ([bias_var] if bias is not None else [])
    args += [cexpr(v) for v in (b, sq, sk, heads, *ld)]
    args += [float_literal(attention_scale(attrs))] + [cexpr(s) for s in bias_strides]
    # two GEMMs per (batch, head): q k^T and p v, each 2 * Sq * Sk * head_dim
    flops = Dim.of(b) * sq * sk * (4 * heads * hd)
    lw.call(kernel, args, scratch_shared=scratch, flops=flops)
