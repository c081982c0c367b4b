"""cuda lowering of row-wise, window and attention ops: layer_norm (+residual), softmax, max/avg
pooling, global average pooling and fused multi-head attention. Own templates, fp16/bf16
storage with float32 math; sizes are run-time arguments, so one kernel serves every layer of a
kind and only what changes the code (window geometry, residual, head_dim) is compiled in."""

from __future__ import annotations

from ait_build.codegen.cexpr import broadcast_strides, cexpr, elements
from ait_build.codegen.cpu_elementwise import float_literal
from ait_build.codegen.cpu_gemm import window_attrs
from ait_build.codegen.kernel import make_kernel
from ait_build.errors import AitError
from ait_build.ir.dims import Dim
from ait_build.ops.attention import attention_scale
from ait_build.ops.registry import norm_axis

# head_dim is a compile-time constant of the attention kernel; each lane of 8 holds
# ceil(head_dim / 8) of q and of the output row in registers
MAX_HEAD_DIM = 256


def io_params(lw, out: str, *names: str) -> list:
    ctype = lw.ctype(out)
    return [(f"{ctype}*", "out")] + [(f"const {ctype}*", n) for n in names]


def lower_layer_norm(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    has_res = len(node.inputs) > 1
    affine = bool(node.attrs["affine"])
    params = io_params(lw, out, "x", *(["res"] if has_res else []))
    params += [("const float*", "weight"), ("const float*", "bias")] if affine else []
    params += [("int64_t", "rows"), ("int64_t", "C"), ("float", "eps")]
    kernel = make_kernel("layer_norm" + ("_res" if has_res else ""), node.op,
                         "cuda/layer_norm.cu.j2",
                         dict(has_residual=has_res, affine=affine, ctype=lw.ctype(out)), params)
    args = [lw.dst(out), lw.src(x)] + ([lw.src(node.inputs[1])] if has_res else [])
    args += [lw.weight("weight"), lw.weight("bias")] if affine else []
    args += [cexpr(elements(lw.shape(x)[:-1])), cexpr(lw.shape(x)[-1]),
             float_literal(node.attrs["eps"])]
    lw.call(kernel, args)


def lower_softmax(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    shape = lw.shape(x)
    axis = norm_axis(node.attrs["axis"], len(shape))
    inner = elements(shape[axis + 1:])
    params = io_params(lw, out, "x") + [("int64_t", p) for p in ("outer", "L", "inner")]
    kernel = make_kernel("softmax", node.op, "cuda/softmax.cu.j2",
                         dict(contiguous=inner == Dim.of(1), ctype=lw.ctype(out)), params)
    lw.call(kernel, [lw.dst(out), lw.src(x), cexpr(elements(shape[:axis])), cexpr(shape[axis]),
                     cexpr(inner)])


def lower_pool(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    n, h, w, c = lw.shape(x)
    _, ho, wo, _ = lw.shape(out)
    kind = "max" if node.op == "max_pool2d" else "avg"
    context = dict(window_attrs(node.attrs), kind=kind, ctype=lw.ctype(out),
                   count_include_pad=bool(node.attrs.get("count_include_pad", True)))
    params = io_params(lw, out, "x") + [("int64_t", s) for s in ("N", "H", "W", "C", "HO", "WO")]
    kernel = make_kernel(f"{kind}_pool2d", node.op, "cuda/pool2d.cu.j2", context, params)
    lw.call(kernel, [lw.dst(out), lw.src(x)] + [cexpr(v) for v in (n, h, w, c, ho, wo)])


def lower_global_avg_pool(lw) -> None:
    node = lw.node
    n, h, w, c = lw.shape(node.inputs[0])
    params = io_params(lw, node.output, "x") + [("int64_t", p) for p in ("N", "HW", "C")]
    kernel = make_kernel("global_avg_pool", node.op, "cuda/global_avg_pool.cu.j2",
                         dict(ctype=lw.ctype(node.output)), params)
    lw.call(kernel, [lw.dst(node.output), lw.src(node.inputs[0]), cexpr(n), cexpr(h * w),
                     cexpr(c)])


def lower_attention(lw) -> None:
    """softmax(scale * q k^T + bias [+ causal mask]) v per (batch, head), never materializing the
    scores: templates/cuda/attention.cu.j2 streams key tiles with an online softmax."""
    node = lw.node
    attrs = node.attrs
    heads, hd = attrs["num_heads"], attrs["head_dim"]
    if hd > MAX_HEAD_DIM:
        raise AitError(f"{node.loc}: the cuda attention kernel takes head_dim <= {MAX_HEAD_DIM}, "
                       f"'{node.name}' has {hd}")
    n_qkv = 1 if attrs["packed"] else 3
    q = node.inputs[0]
    bias = node.inputs[n_qkv] if len(node.inputs) > n_qkv else None
    b, sq, width = lw.shape(q)
    if attrs["packed"]:
        base = lw.src(q)
        qv, kv, vv = base, f"{base} + {heads * hd}", f"{base} + {2 * heads * hd}"
        sk, ld = sq, [width] * 3
    else:
        qv, kv, vv = (lw.src(t) for t in node.inputs[:3])
        sk = lw.shape(node.inputs[1])[1]
        ld = [lw.shape(t)[2] for t in node.inputs[:3]]
    scores = (b, Dim.of(heads), sq, sk)
    bias_strides = broadcast_strides(lw.shape(bias), scores) if bias is not None else [0] * 4
    out = node.output
    params = io_params(lw, out, "q", "k", "v")
    params += [(f"const {lw.ctype(bias)}*", "bias")] if bias is not None else []
    params += [("int64_t", p) for p in ("B", "Sq", "Sk", "H", "ldq", "ldk", "ldv")]
    params += [("float", "scale")] + [("int64_t", f"bs{i}") for i in range(4)]
    context = dict(has_bias=bias is not None, causal=bool(attrs["causal"]), head_dim=hd,
                   ctype=lw.ctype(out))
    kernel = make_kernel("attention" + ("_causal" if attrs["causal"] else ""), node.op,
                         "cuda/attention.cu.j2", context, params)
    args = [lw.dst(out), qv, kv, vv] + ([lw.src(bias)] if bias is not None else [])
    args += [cexpr(v) for v in (b, sq, sk, heads, *ld)]
    args += [float_literal(attention_scale(attrs))] + [cexpr(s) for s in bias_strides]
    lw.call(kernel, args)
