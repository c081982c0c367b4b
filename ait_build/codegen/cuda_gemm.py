"""cuda lowering of GEMM-shaped ops: linear, matmul/bmm and conv2d.

GEMMs and convolutions run through CUTLASS 2.x sm80 tensor-op kernels (they run unchanged on
sm_90a) with the epilogue act(acc + bias + residual) fused by CUTLASS's broadcast epilogue:
LinearCombinationBiasElementwise computes act(alpha * acc + beta * C + V) with C the residual
(beta = 1, or 0 and never read) and V the per-column bias (a null pointer reads as zeros), so
one kernel serves every bias/residual combination and a kernel's identity is only its element
type, operand alignments and activation (and its accumulator, below). Sizes are run-time
arguments; each kernel holds a large and a small tile configuration and picks per call
(templates/cuda/gemm_sm80.cu.j2).

What CUTLASS cannot take goes to own templates: grouped and depthwise convolutions and operands
whose rows are not 4-byte aligned (a direct conv, a plain tiled GEMM). A residual that is neither
the output's shape nor a per-column vector is added by a following elementwise pass.

A target picks the GEMM family with `kernels: {gemm: ..., conv2d: ...}`. `cutlass_sm90` adds a
CUTLASS 3.x warp-specialized TMA kernel with the same epilogue as an epilogue visitor tree to the
16-bit GEMMs whose K and N are multiples of 8 (gemm_sm90.cu.j2; calls too small to fill the
device keep the sm80 configurations); its convs are still the sm80 ones (docs/cuda.md).

The CUTLASS kernels accumulate in float32 unless the target asks for `precision: {accumulate:
float16}`: then those of float16 models accumulate in half_t (the epilogue still computes in
float32); bfloat16 and float32 models and the own templates keep float32.
"""

from __future__ import annotations

from ait_build.codegen.cexpr import broadcast_strides, cexpr, collapse, contiguous_strides, elements
from ait_build.codegen.cpu_elementwise import ACT, Operand, elementwise, float_literal
from ait_build.codegen.cpu_gemm import conv_geometry, residual_mode
from ait_build.codegen.kernel import make_kernel
from ait_build.errors import AitError
from ait_build.ir.dims import Dim

# kernel family (target.kernels) -> (GEMM template, conv template)
FAMILIES = {
    "cutlass_sm80": ("cuda/gemm_sm80.cu.j2", "cuda/conv2d_sm80.cu.j2"),
    # GEMMs: the sm80 kernel plus a CUTLASS 3.x warp-specialized TMA kernel for the calls that
    # fill the device (gemm_sm90.cu.j2); convs: the sm80 implicit GEMM for now
    "cutlass_sm90": ("cuda/gemm_sm90.cu.j2", "cuda/conv2d_sm80.cu.j2"),
}
SM80_GEMM = FAMILIES["cutlass_sm80"][0]
# the sm90 kernel's tile (M, N, K) and cluster for 16-bit elements, cooperative schedule (two
# consumer warp groups share the 128 rows), as in the gemm90 spike (904 TFLOP/s on the H200);
# TMA wants rows of 16 bytes: K and N multiples of 8 elements
SM90_TILE = "128, 256, 64"
SM90_CLUSTER = "2, 1, 1"
SM90_ALIGN = 8
SIMPLE_GEMM = "cuda/gemm_simple.cu.j2"
DIRECT_CONV = "cuda/conv2d_direct.cu.j2"

ELEMENT = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t", "float32": "float"}
ACCUMULATOR = {"float16": "cutlass::half_t", "float32": "float"}
ACT_FUNCTOR = {"none": "ait::ActIdentity", "relu": "ait::ActRelu", "gelu": "ait::ActGelu",
               "gelu_tanh": "ait::ActGeluTanh", "silu": "ait::ActSilu",
               "sigmoid": "ait::ActSigmoid", "tanh": "ait::ActTanh",
               "hardswish": "ait::ActHardswish"}


def tensor_op(dtype: str) -> dict:
    """Tile configurations (threadblock, warp, stages), instruction shape, math operator and the
    alignments (elements per access) CUTLASS's sm80 tensor-op kernels take for `dtype`. float32
    runs as 3xTF32 (OpMultiplyAddFastF32): tensor cores at close to float32 accuracy."""
    if dtype == "float32":
        return dict(configs=(("64, 64, 16", "32, 32, 16", 4),), inst="16, 8, 8",
                    math="cutlass::arch::OpMultiplyAddFastF32", aligns=(4, 2, 1))
    # 16-bit: the large tile for big problems, the small one when the large would leave
    # multiprocessors idle (batch 1); the kernel chooses per call
    return dict(configs=(("128, 128, 32", "64, 64, 32", 3), ("64, 64, 32", "32, 32, 32", 4)),
                inst="16, 8, 16", math="cutlass::arch::OpMultiplyAdd", aligns=(8, 4, 2))


def accumulator(lw, dtype: str) -> dict:
    """The CUTLASS kernels' accumulator as context: {} for float32 (the templates' default, so
    the default kernels keep their names), {'accumulator': 'cutlass::half_t'} for a float16 model
    on a target with `precision: {accumulate: float16}` (target.accumulator). Own templates
    (gemm_simple, conv2d_direct) always accumulate in float32 and never get it."""
    acc = lw.plan.target.accumulator(dtype)
    return {} if acc == "float32" else {"accumulator": ACCUMULATOR[acc]}


def alignment(dims, choices) -> int:
    """The widest access (in elements) that divides every contiguous extent; 0: none does."""
    for a in choices:
        if all(Dim.of(d).is_static and Dim.of(d).value % a == 0 for d in dims):
            return a
    return 0


def family(lw, op: str) -> tuple:
    name = lw.plan.target.kernel(op, "cutlass_sm80")
    if name not in FAMILIES:
        raise AitError(f"target '{lw.plan.target.name}': kernels.{op} is '{name}'; the cuda "
                       f"backend has {', '.join(sorted(FAMILIES))}")
    return FAMILIES[name]


class Epilogue:
    """A node's epilogue: what its kernel fuses (bias, a same-shaped residual, the activation)
    and what a following elementwise pass adds (a residual of another shape)."""

    def __init__(self, lw, data_inputs: int, has_bias: bool):
        node = lw.node
        self.act = node.attrs.get("activation", "none")
        residual = node.inputs[data_inputs] if len(node.inputs) > data_inputs else None
        self.residual = self.row = self.later = None
        self.bias = lw.weight("bias", dtype=lw.dtype(node.output)) if has_bias else None
        if residual is not None:
            mode = residual_mode(lw.shape(node.output), lw.shape(residual))
            if mode == "full":
                self.residual = residual
            elif mode == "row" and self.bias is None:  # a per-column residual is a bias
                self.bias = lw.src(residual)
            else:
                self.later = residual
        self.kernel_act = "none" if self.later else self.act

    def args(self, lw) -> list:
        return [self.bias or "nullptr", lw.src(self.residual) if self.residual else "nullptr"]

    def finish(self, lw, out: str) -> None:
        if self.later is None:
            return
        ctype = lw.ctype(out)
        dst = Operand(lw.dst(out), ctype, lw.shape(out))
        res = Operand(lw.src(self.later), lw.ctype(self.later), lw.shape(self.later))
        elementwise(lw, "residual", dst, [dst, res], f"{ACT[self.act]}((v0 + v1))")


def label_of(op: str, epi: Epilogue) -> str:
    return op + ("" if epi.kernel_act == "none" else f"_{epi.kernel_act}")


GEMM_PARAMS = ["out", "a", "b", "bias", "res"]


def gemm_call(lw, epi: Epilogue, out: str, a_var: str, b_var: str, m, n, k, col_b: bool,
              batch=(), a_bs=(), b_bs=(), alpha=1.0) -> None:
    """out[.., M, N] = act(alpha * A[.., M, K] B + bias + res); B is [.., N, K] when `col_b`
    (column-major K x N) else [.., K, N]. At most two batch axes after collapsing."""
    dtype = lw.dtype(out)
    ctype = lw.ctype(out)
    out_bs = contiguous_strides(batch)
    sizes, (abs_, bbs, _) = collapse(batch, a_bs, b_bs, out_bs)
    if len(sizes) == 1 and sizes[0] == 1:
        sizes, abs_, bbs = [], [], []
    if len(sizes) > 2:
        raise AitError(f"{lw.node.loc}: the cuda backend batches GEMMs over at most two axes; "
                       f"'{lw.node.name}' needs {len(sizes)}")
    sizes, abs_, bbs = ([1] * (2 - len(sizes)) + list(sizes), [0] * (2 - len(abs_)) + list(abs_),
                        [0] * (2 - len(bbs)) + list(bbs))
    tc = tensor_op(dtype)
    align_a = alignment([k], tc["aligns"])
    align_b = alignment([k if col_b else n], tc["aligns"])
    align_c = alignment([n], tc["aligns"])
    context = dict(element=ELEMENT[dtype], ctype=ctype, col_b=col_b, act=ACT_FUNCTOR[epi.kernel_act],
                   act_fn=ACT[epi.kernel_act])
    if min(align_a, align_b, align_c) > 0:
        template = family(lw, "gemm")[0]
        if template != SM80_GEMM:
            if dtype == "float32" or min(align_a, align_b, align_c) < SM90_ALIGN:
                template = SM80_GEMM  # float32 (3xTF32) and unaligned rows: sm80 only
            else:
                context.update(sm90_tile=SM90_TILE, sm90_cluster=SM90_CLUSTER)
        context.update(align_a=align_a, align_b=align_b, align_c=align_c, inst=tc["inst"],
                       math=tc["math"], configs=tuple(" / ".join(map(str, c)) for c in tc["configs"]),
                       **accumulator(lw, dtype))
        label = "gemm"
    else:
        template, label = SIMPLE_GEMM, "gemm_simple"
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "a"), (f"const {ctype}*", "b"),
              (f"const {ctype}*", "bias"), (f"const {ctype}*", "res")]
    params += [("int64_t", p) for p in ("M", "N", "K")] + [("float", "alpha")]
    params += [("int64_t", p) for p in ("bo", "bi", "a_so", "a_si", "b_so", "b_si")]
    kernel = make_kernel(label_of(label, epi), lw.node.op, template, context, params)
    args = [lw.dst(out), a_var, b_var] + epi.args(lw)
    args += [cexpr(m), cexpr(n), cexpr(k), float_literal(alpha)]
    args += [cexpr(v) for v in (sizes[0], sizes[1], abs_[0], abs_[1], bbs[0], bbs[1])]
    lw.call(kernel, args)
    epi.finish(lw, out)


def lower_linear(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    k = lw.shape(x)[-1]
    n = Dim.of(node.attrs["out_features"])
    epi = Epilogue(lw, 1, bool(node.attrs["bias"]))
    w = lw.weight("weight", dtype=lw.dtype(out))  # PyTorch's [N, K] is B column-major
    gemm_call(lw, epi, out, lw.src(x), w, elements(lw.shape(x)[:-1]), n, k, col_b=True)


def lower_matmul(lw) -> None:
    node = lw.node
    a, b, out = node.inputs[0], node.inputs[1], node.output
    trans_b = bool(node.attrs["transpose_b"])
    sa, sb, so = lw.shape(a), lw.shape(b), lw.shape(out)
    m, k, n = sa[-2], sa[-1], so[-1]
    batch = so[:-2]
    epi = Epilogue(lw, 2, False)
    a_bs = [s * m * k for s in broadcast_strides(sa[:-2], batch)]
    b_bs = [s * k * n for s in broadcast_strides(sb[:-2], batch)]
    if batch and all(s == 0 for s in b_bs) and tuple(sa[:-2]) == tuple(batch):
        m, batch, a_bs, b_bs = elements(batch) * m, (), (), ()  # one tall GEMM against shared b
    gemm_call(lw, epi, out, lw.src(a), lw.src(b), m, n, k, trans_b, batch, a_bs, b_bs,
              node.attrs["alpha"])


def lower_conv2d(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    (_, _, _, c, _, _, o), g, win, sizes, size_params = conv_geometry(lw)
    kh, kw = win["kh"], win["kw"]
    dtype, ctype = lw.dtype(out), lw.ctype(out)
    epi = Epilogue(lw, 1, bool(node.attrs["bias"]))
    cv, ov = c.value, o.value
    tc = tensor_op(dtype)
    align_in = alignment([c], tc["aligns"])
    align_out = alignment([o], tc["aligns"])
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "x"), (f"const {ctype}*", "w"),
              (f"const {ctype}*", "bias"), (f"const {ctype}*", "res")] + size_params
    context = dict(element=ELEMENT[dtype], ctype=ctype, act=ACT_FUNCTOR[epi.kernel_act],
                   act_fn=ACT[epi.kernel_act])
    if g == 1 and align_in and align_out:  # implicit GEMM; filters as CUTLASS's KRSC
        wt = lw.weight("weight", lambda a: a.transpose(0, 2, 3, 1), "krsc", (ov, kh, kw, cv),
                       dtype=dtype)
        context.update(align_a=align_in, align_b=align_in, align_c=align_out, inst=tc["inst"],
                       math=tc["math"], configs=tuple(" / ".join(map(str, cf)) for cf in tc["configs"]),
                       **accumulator(lw, dtype))
        template, label = family(lw, "conv2d")[1], "conv2d"
        params += [("int", p) for p in ("KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW")]
        extra = [str(win[p]) for p in ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")]
    else:  # grouped, depthwise or unaligned channels: direct, weights [KH][KW][C/G][O]
        cg = cv // g
        wt = lw.weight("weight", lambda a: a.transpose(2, 3, 1, 0), "hwio", (kh, kw, cg, ov),
                       dtype=dtype)
        context.update(win, groups=g)
        template = DIRECT_CONV
        label = "depthwise_conv2d" if g == cv == ov else "conv2d_direct"
        extra = []
    kernel = make_kernel(label_of(label, epi), "conv2d", template, context, params)
    lw.call(kernel, [lw.dst(out), lw.src(x), wt] + epi.args(lw) + sizes + extra)
    epi.finish(lw, out)
