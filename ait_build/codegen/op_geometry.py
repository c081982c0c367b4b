"""The geometry GEMM-shaped and window ops share on every backend: how a residual broadcasts
onto a GEMM's output, a window's sizes, a conv's dims as kernel arguments, and where an attention
node's q, k, v and bias live."""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.codegen.cexpr import broadcast_strides, cexpr, contiguous_strides, elements
from ait_build.ir.dims import Dim
from ait_build.ops.conv import window_params


def conv_kernel_params(ctype: str, weight_ctype: str, size_params: list) -> list:
    """The (type, name) parameters the GPU conv kernels take: out, x, w (stored as
    `weight_ctype`), bias and res, then conv_geometry's sizes."""
    return [(f"{ctype}*", "out"), (f"const {ctype}*", "x"), (f"const {weight_ctype}*", "w"),
            (f"const {ctype}*", "bias"), (f"const {ctype}*", "res")] + size_params


def residual_mode(out_shape, res_shape) -> str | None:
    """'full' (same elements as the output), 'row' (one value per output column) or None."""
    strides = broadcast_strides(res_shape, out_shape)
    if tuple(strides) == tuple(contiguous_strides(out_shape)) or all(d == 1 for d in out_shape):
        return "full"
    if all(s == 0 for s in strides[:-1]) and strides[-1] == 1:
        return "row"
    return None


@dataclass(frozen=True)
class MatmulGeometry:
    """A matmul/bmm as one (possibly batched) GEMM: sizes and per-batch element strides of a and
    b (0 where broadcast). A batch over which b is shared collapses into one tall GEMM."""

    m: Dim
    n: Dim
    k: Dim
    batch: tuple  # output batch dims; () for one GEMM
    a_bs: tuple
    b_bs: tuple
    trans_b: bool


def matmul_geometry(lw) -> MatmulGeometry:
    """What every backend's matmul/bmm lowering starts from."""
    node = lw.node
    sa, sb, so = lw.shape(node.inputs[0]), lw.shape(node.inputs[1]), lw.shape(node.output)
    m, k, n = sa[-2], sa[-1], so[-1]
    batch = so[:-2]
    a_bs = [s * m * k for s in broadcast_strides(sa[:-2], batch)]
    b_bs = [s * k * n for s in broadcast_strides(sb[:-2], batch)]
    if batch and all(s == 0 for s in b_bs) and tuple(sa[:-2]) == tuple(batch):
        m, batch, a_bs, b_bs = elements(batch) * m, (), (), ()  # one tall GEMM against shared b
    return MatmulGeometry(m, n, k, batch, a_bs, b_bs, bool(node.attrs["transpose_b"]))


def window_attrs(attrs) -> dict:
    # the op row resolves defaults (a pool's stride defaults to its kernel, as in PyTorch)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window_params(attrs)
    return dict(kh=kh, kw=kw, sh=sh, sw=sw, ph=ph, pw=pw, dh=dh, dw=dw)


def conv_geometry(lw) -> tuple:
    """What every backend's conv2d lowering starts from: the (N, H, W, C, HO, WO, O) Dims, the
    groups, the window (window_attrs), and those sizes as C++ arguments with their int64_t
    parameters, in the order the kernels take them."""
    node = lw.node
    dims = (*lw.shape(node.inputs[0]), *lw.shape(node.output)[1:])
    size_params = [("int64_t", s) for s in ("N", "H", "W", "C", "HO", "WO", "O")]
    return (dims, node.attrs["groups"], window_attrs(node.attrs), [cexpr(v) for v in dims],
            size_params)


@dataclass(frozen=True)
class AttentionOperands:
    """Where an attention node's q, k, v (and bias) live, shared by every backend's lowering."""

    q: str  # C expressions of the three base pointers
    k: str
    v: str
    bias: str | None  # the bias tensor's name
    b: Dim
    sq: Dim
    sk: Dim
    ld: list  # row strides of q, k, v
    bias_strides: list  # bias strides over [b, heads, sq, sk] (0 where broadcast)


def attention_operands(lw) -> AttentionOperands:
    """Packed qkv is read in place: k and v start heads*head_dim and twice that into each row."""
    node, attrs = lw.node, lw.node.attrs
    heads, hd = attrs["num_heads"], attrs["head_dim"]
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
    period = attrs.get("bias_period", 0)  # batch b reads bias[b % period]
    scores = (Dim.of(period) if period else b, Dim.of(heads), sq, sk)
    bias_strides = broadcast_strides(lw.shape(bias), scores) if bias is not None else [0] * 4
    return AttentionOperands(qv, kv, vv, bias, b, sq, sk, ld, bias_strides)
