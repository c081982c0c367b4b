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

from ait_build.codegen import cpu_data
from ait_build.codegen.cexpr import broadcast_strides, cexpr, collapse, contiguous_strides, elements
from ait_build.codegen.cpu_elementwise import ACT, Operand, elementwise, float_literal
from ait_build.codegen.cpu_gemm import conv_geometry, residual_mode
from ait_build.codegen.cuda_configs import conv_candidates, gemm_candidates
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.tuning import Tunable
from ait_build.errors import AitError
from ait_build.ir.dims import Dim

# kernel family (target.kernels) -> whether its calls may also run CUTLASS 3.x Hopper kernels
# (codegen/cuda_configs.py lists the configurations of both)
FAMILIES = {"cutlass_sm80": False, "cutlass_sm90": True}
# per op: the dispatch template, each configuration kind's template and its parameters
CUTLASS = {
    "gemm": ("cuda/gemm.cu.j2", {"sm80": "cuda/gemm_sm80.cu.j2", "sm90": "cuda/gemm_sm90.cu.j2"},
             ["out", "a", "b", "bias", "res"],
             [("int64_t", p) for p in ("M", "N", "K")] + [("float", "alpha")]
             + [("int64_t", p) for p in ("batch", "a_s", "b_s")]),
    "conv2d": ("cuda/conv2d.cu.j2", {"sm80": "cuda/conv2d_sm80.cu.j2", "sm90": "cuda/conv2d_sm90.cu.j2"},
               ["out", "x", "w", "bias", "res"],
               [("int", p) for p in ("N", "H", "W", "C", "O", "HO", "WO", "KH", "KW", "SH", "SW",
                                     "PH", "PW", "DH", "DW")]),
}
SIMPLE_GEMM = "cuda/gemm_simple.cu.j2"
DIRECT_CONV = "cuda/conv2d_direct.cu.j2"
WINDOW = ("KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW")  # the convs' int window arguments

ELEMENT = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t", "float32": "float"}
ACCUMULATOR = {"float16": "cutlass::half_t", "float32": "float"}
ACT_FUNCTOR = {"none": "ait::ActIdentity", "relu": "ait::ActRelu", "gelu": "ait::ActGelu",
               "gelu_tanh": "ait::ActGeluTanh", "silu": "ait::ActSilu",
               "sigmoid": "ait::ActSigmoid", "tanh": "ait::ActTanh",
               "hardswish": "ait::ActHardswish"}


def tensor_op(dtype: str) -> dict:
    """Instruction shape, math operator and the alignments (elements per access) CUTLASS's sm80
    tensor-op kernels take for `dtype`. float32 runs as 3xTF32 (OpMultiplyAddFastF32): tensor
    cores at close to float32 accuracy. The tile configurations are in cuda_configs.py."""
    if dtype == "float32":
        return dict(inst="16, 8, 8", math="cutlass::arch::OpMultiplyAddFastF32", aligns=(4, 2, 1))
    return dict(inst="16, 8, 16", math="cutlass::arch::OpMultiplyAdd", aligns=(8, 4, 2))


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


def hopper(lw, op: str) -> bool:
    """Whether the target's kernel family for `op` offers the CUTLASS 3.x Hopper kernels."""
    name = lw.plan.target.kernel(op, "cutlass_sm80")
    if name not in FAMILIES:
        raise AitError(f"target '{lw.plan.target.name}': kernels.{op} is '{name}'; the cuda "
                       f"backend has {', '.join(sorted(FAMILIES))}")
    return FAMILIES[name]


def cutlass_context(lw, dtype: str, epi, aligns: tuple) -> dict:
    """The context every CUTLASS GEMM/conv kernel of this call shares, whatever its tiles."""
    tc = tensor_op(dtype)
    return dict(element=ELEMENT[dtype], ctype=lw.plan.ctypes[dtype], act=ACT_FUNCTOR[epi.kernel_act],
                act_fn=ACT[epi.kernel_act], align_a=aligns[0], align_b=aligns[1], align_c=aligns[2],
                inst=tc["inst"], math=tc["math"], **accumulator(lw, dtype))


def family_text(op: str, dtype: str, epi, context: dict, extra: str = "") -> str:
    """The readable identity profiles key on: what shapes a kernel's code besides its tiles."""
    return (f"{op} {dtype}{extra} act={epi.kernel_act} "
            f"align={context['align_a']},{context['align_b']},{context['align_c']}"
            + (" acc=float16" if context.get("accumulator") else ""))


def _static(value):
    d = Dim.of(value)
    return d.value if d.is_static else str(d)


def tuned(lw, op: str, label: str, context: dict, params: list, args: list, fields: dict) -> None:
    """Records a CUTLASS call whose configuration a profile may choose (codegen/tuning.py). Its
    kernel is a dispatch over parts, one per configuration, each compiled on its own: the part
    of a configuration is the same file in every model and profiling harness that uses it."""
    dispatch, templates, pointers, sizes = CUTLASS[op]
    ctype = context["ctype"]
    part_params = [(f"{ctype}*" if p == "out" else f"const {ctype}*", p) for p in pointers] + sizes
    params = params + [("int", "config")]

    def make(configs, ladder):
        parts = tuple(make_kernel(f"{label}_{c.kind}", op, templates[c.kind],
                                  dict(context, **dict(c.context)), part_params) for c in configs)
        return make_kernel(label, op, dispatch, dict(
            ctype=ctype, align=min(context["align_a"], context["align_b"], context["align_c"]),
            parts=tuple(p.name for p in parts), tile_m=tuple(c.tile[0] for c in configs),
            tile_n=tuple(c.tile[1] for c in configs), base_align=tuple(c.base_align for c in configs),
            ladder=tuple(ladder)), params, parts)
    group = make_kernel(label, op, dispatch, context, params).name  # the family's identity
    sizes = {name: Dim.of(v) for name, v in fields["scalars"] if name != "alpha"}
    flops = (sizes["M"] * sizes["N"] * sizes["K"] * sizes["bo"] * sizes["bi"] if op == "gemm" else
             sizes["N"] * sizes["HO"] * sizes["WO"] * sizes["O"] * sizes["C"] * sizes["KH"] * sizes["KW"])
    lw.tuned_call(Tunable(**fields), make, args, group, flops=flops * 2)


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
    aligns = (alignment([k], tc["aligns"]), alignment([k if col_b else n], tc["aligns"]),
              alignment([n], tc["aligns"]))
    op = "gemm"  # linear, matmul, bmm and pointwise convs alike: they share kernels
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "a"), (f"const {ctype}*", "b"),
              (f"const {ctype}*", "bias"), (f"const {ctype}*", "res")]
    params += [("int64_t", p) for p in ("M", "N", "K")] + [("float", "alpha")]
    params += [("int64_t", p) for p in ("bo", "bi", "a_so", "a_si", "b_so", "b_si")]
    scalars = [("M", m), ("N", n), ("K", k), ("alpha", float(alpha)), ("bo", sizes[0]),
               ("bi", sizes[1]), ("a_so", abs_[0]), ("a_si", abs_[1]), ("b_so", bbs[0]),
               ("b_si", bbs[1])]
    args = [lw.dst(out), a_var, b_var] + epi.args(lw)
    args += [cexpr(v) if name != "alpha" else float_literal(v) for name, v in scalars]
    if min(aligns) == 0:  # rows CUTLASS cannot read (odd K in fp16): a plain tiled GEMM
        context = dict(element=ELEMENT[dtype], ctype=ctype, col_b=col_b,
                       act=ACT_FUNCTOR[epi.kernel_act], act_fn=ACT[epi.kernel_act])
        lw.call(make_kernel(label_of("gemm_simple", epi), op, SIMPLE_GEMM, context, params), args)
        epi.finish(lw, out)
        return
    context = dict(cutlass_context(lw, dtype, epi, aligns), col_b=col_b)
    candidates, ladder = gemm_candidates(dtype, hopper(lw, "gemm"), min(aligns))
    layout = f" b={'col' if col_b else 'row'}"
    tuned(lw, "gemm", label_of("gemm", epi), context, params, args, dict(
        kind="gemm", family=family_text("gemm", dtype, epi, context, layout),
        problem=(("n", _static(n)), ("k", _static(k)), ("l", _static(Dim.of(sizes[0]) * sizes[1]))),
        extent=Dim.of(m), scalars=tuple(scalars),
        operands=(("bias", epi.bias is not None), ("res", epi.residual is not None)),
        candidates=candidates, ladder=ladder))
    epi.finish(lw, out)


def lower_linear(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    k = lw.shape(x)[-1]
    n = Dim.of(node.attrs["out_features"])
    epi = Epilogue(lw, 1, bool(node.attrs["bias"]))
    # PyTorch's [N, K] is B column-major; an `in_out` weight ([K, N], GPT-2) is stored as [N, K]
    in_out = node.attrs.get("weight_layout") == "in_out"
    w = lw.weight("weight", (lambda a: a.T) if in_out else None, "nk" if in_out else "",
                  (n.value, k.value), dtype=lw.dtype(out))
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


def patches(win: dict) -> bool:
    """Whether a conv's windows tile its input without overlap or padding (kernel == stride)."""
    return (win["kh"] == win["sh"] and win["kw"] == win["sw"] and win["ph"] == win["pw"] == 0
            and win["dh"] == win["dw"] == 1)


def lower_conv2d(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    dims, g, win, sizes, size_params = conv_geometry(lw)
    n, h, w, c, ho, wo, o = dims
    kh, kw = win["kh"], win["kw"]
    dtype, ctype = lw.dtype(out), lw.ctype(out)
    epi = Epilogue(lw, 1, bool(node.attrs["bias"]))
    cv, ov = c.value, o.value
    tc = tensor_op(dtype)
    align_in = alignment([c], tc["aligns"])
    align_out = alignment([o], tc["aligns"])
    if g == 1 and align_in and align_out:  # implicit GEMM; filters as CUTLASS's KRSC
        wt = lw.weight("weight", lambda a: a.transpose(0, 2, 3, 1), "krsc", (ov, kh, kw, cv),
                       dtype=dtype)
        if kh == kw == 1 and win["sh"] == win["sw"] == 1 and win["ph"] == win["pw"] == 0:
            # a pointwise conv over NHWC rows is the GEMM [N*H*W, C] x [O, C]^T: the GEMM
            # kernels (Hopper's included) take it
            gemm_call(lw, epi, out, lw.src(x), wt, n * h * w, o, c, col_b=True)
            return
        if patches(win):
            # non-overlapping windows (ViT's 16x16 patches): gather each window's KH*KW*C
            # values into a row, then the GEMM [N*HO*WO, KH*KW*C] x [O, KH*KW*C]^T
            rows = lw.plan.add_slot(f"{node.name}:patches", ctype, (n, ho, wo, kh, kw, c)).var
            cpu_data.copy(lw, rows, lw.src(x), ctype, [n, ho, kh, wo, kw, c],
                          [h * w * c, kh * w * c, w * c, kw * c, c, 1],
                          [ho * wo * kh * kw * c, wo * kh * kw * c, kw * c, kh * kw * c, c, 1],
                          "patches")
            gemm_call(lw, epi, out, rows, wt, n * ho * wo, o, c * (kh * kw), col_b=True)
            return
        params = [(f"{ctype}*", "out"), (f"const {ctype}*", "x"), (f"const {ctype}*", "w"),
                  (f"const {ctype}*", "bias"), (f"const {ctype}*", "res")] + size_params
        params += [("int", p) for p in WINDOW]
        aligns = (align_in, align_in, align_out)
        context = cutlass_context(lw, dtype, epi, aligns)
        candidates, ladder = conv_candidates(dtype, hopper(lw, "conv2d"), min(aligns), cv)
        window = [win[p.lower()] for p in WINDOW]
        scalars = list(zip(("N", "H", "W", "C", "HO", "WO", "O"), dims)) + list(zip(WINDOW, window))
        args = [lw.dst(out), lw.src(x), wt] + epi.args(lw) + sizes + [str(v) for v in window]
        problem = tuple((k.lower(), _static(v)) for k, v in scalars if k != "N")
        tuned(lw, "conv2d", label_of("conv2d", epi), context, params, args, dict(
            kind="conv2d", family=family_text("conv2d", dtype, epi, context), problem=problem,
            extent=Dim.of(n), scalars=tuple(scalars),
            operands=(("bias", epi.bias is not None), ("res", epi.residual is not None)),
            candidates=candidates, ladder=ladder))
        epi.finish(lw, out)
        return
    # grouped, depthwise or unaligned channels: direct, weights [KH][KW][C/G][O]
    cg = cv // g
    wt = lw.weight("weight", lambda a: a.transpose(2, 3, 1, 0), "hwio", (kh, kw, cg, ov), dtype=dtype)
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "x"), (f"const {ctype}*", "w"),
              (f"const {ctype}*", "bias"), (f"const {ctype}*", "res")] + size_params
    context = dict(element=ELEMENT[dtype], ctype=ctype, act=ACT_FUNCTOR[epi.kernel_act],
                   act_fn=ACT[epi.kernel_act], **win, groups=g)
    label = "depthwise_conv2d" if g == cv == ov else "conv2d_direct"
    kernel = make_kernel(label_of(label, epi), "conv2d", DIRECT_CONV, context, params)
    lw.call(kernel, [lw.dst(out), lw.src(x), wt] + epi.args(lw) + sizes)
    epi.finish(lw, out)
