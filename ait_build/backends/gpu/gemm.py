"""GPU lowering of GEMM-shaped ops (linear, matmul/bmm, conv2d), shared by the GPU backends.

A backend brings its matrix engine (`MatrixEngine`: cuda's CUTLASS kernels, rocm's MFMA ones):
element types, operand alignments, the context its kernels share and the configurations a call
may run. This module decides the rest, the same way for every engine: the epilogue act(acc +
bias + residual) fused in the kernel (a per-column residual becomes the bias; a residual of
another shape is added by a following elementwise pass), batch axes collapsed to at most two,
pointwise and patch convs as GEMMs, convs over few input channels as im2col + GEMM (im2col.py),
a squeeze-excitation's gate folded into the 1x1 conv after it (its weights scaled per image, then
a GEMM batched over the images: `scaled_pointwise`), implicit-GEMM convs, and the tuned call
(codegen/tuning.py) whose kernel is a dispatch (the backend's `gemm`/`conv2d` template) over one
part per configuration. Sizes are run-time arguments.

What an engine cannot take goes to the GPU layer's own templates: depthwise convolutions
(depthwise.py), grouped ones and operands whose rows the engine cannot read (`conv2d_direct`,
`gemm_simple`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Mapping

from ait_build.backends.gpu import depthwise, im2col, stem
from ait_build.codegen import data_movement, epilogue
from ait_build.codegen.cexpr import cexpr, collapse, contiguous_strides, elements
from ait_build.codegen.elementwise import act_fn, act_struct, float_literal
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.op_geometry import conv_geometry, conv_kernel_params, matmul_geometry
from ait_build.codegen.squeeze_excitation import Scale, plan_scales
from ait_build.codegen.tuning import Tunable
from ait_build.errors import AitError
from ait_build.ir.dims import Dim
from ait_build.ops.epilogue import hardtanh_bounds
from ait_build.passes.pad_channels import gathers_windows

# per op: the tuned kernel's pointer parameters and size parameters (every part takes them)
PART_PARAMS = {
    "gemm": (["out", "a", "b", "bias", "res"],
             [("int64_t", p) for p in ("M", "N", "K")] + [("float", "alpha")]
             + [("int64_t", p) for p in ("batch", "a_s", "b_s")]),
    "conv2d": (["out", "x", "w", "bias", "res"],
               [("int", p) for p in ("N", "H", "W", "C", "O", "HO", "WO", "KH", "KW", "SH", "SW",
                                     "PH", "PW", "DH", "DW")]),
}
WINDOW = ("KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW")  # the convs' int window arguments

# activation -> the functor the backend's kernel header defines (cuda: cuda/ait_cuda.h.j2)
ACT_FUNCTOR = {"none": "ait::ActIdentity", "relu": "ait::ActRelu", "gelu": "ait::ActGelu",
               "gelu_tanh": "ait::ActGeluTanh", "silu": "ait::ActSilu",
               "sigmoid": "ait::ActSigmoid", "tanh": "ait::ActTanh",
               "hardswish": "ait::ActHardswish", "relu6": "ait::ActRelu6",
               "hardsigmoid": "ait::ActHardsigmoid"}


def act_functor(act: str, attrs) -> str:
    """The functor template of an epilogue activation (`attrs`: the node's, for hardtanh's
    bounds and leaky_relu's slope)."""
    struct = act_struct(act, attrs)
    return f"{struct}::Act" if struct else ACT_FUNCTOR[act]


@dataclass(frozen=True)
class MatrixEngine:
    """What a GPU backend's tensor-core (matrix-core) GEMMs and convs are made of."""

    name: str  # for messages
    element: Mapping  # dtype -> the element type its templates (and the fallbacks') name
    aligns: Callable  # (dtype) -> the operand alignments (elements per access) it can read, widest first
    context: Callable  # (lw, dtype, epi, aligns) -> the context every kernel of a call shares
    # (lw, op, dtype, min_align, channels, out_channels) -> (candidates, ladder); channels: a
    # conv's input channels, a GEMM's smaller static N or K (0: not both static); out_channels:
    # a conv's output channels (0 for GEMMs)
    candidates: Callable
    parts: Mapping  # op -> configuration kind -> template of one configuration's part
    # (lw, op, problem, candidates) -> (extent -> the Config its estimate ranks first), or None
    # where it has none: what a call without a profile entry runs (codegen/tuning.py)
    estimate: Callable | None = None


def lowerings(engine: MatrixEngine) -> dict:
    """The rows of a GPU backend's LOWER table for GEMM-shaped ops, on its matrix engine."""
    return {"linear": partial(lower_linear, engine), "matmul": partial(lower_matmul, engine),
            "bmm": partial(lower_matmul, engine), "conv2d": partial(lower_conv2d, engine)}


def alignment(dims, choices) -> int:
    """The widest access (in elements) that divides every contiguous extent; 0: none does."""
    for a in choices:
        if all(Dim.of(d).is_static and Dim.of(d).value % a == 0 for d in dims):
            return a
    return 0


def family_text(op: str, dtype: str, epi, context: dict, extra: str = "") -> str:
    """The readable identity profiles key on: what shapes a kernel's code besides its tiles."""
    return (f"{op} {dtype}{extra} act={epi.act_text} "
            f"align={context['align_a']},{context['align_b']},{context['align_c']}"
            + (" acc=float16" if context.get("accumulator") else ""))


def _static(value):
    d = Dim.of(value)
    return d.value if d.is_static else str(d)


def tuned(engine: MatrixEngine, lw, op: str, label: str, context: dict, params: list, args: list,
          fields: dict) -> None:
    """Records a call whose configuration a profile may choose (codegen/tuning.py). Its kernel
    is a dispatch over parts, one per configuration, each compiled on its own: the part of a
    configuration is the same file in every model and profiling harness that uses it."""
    dispatch, templates = lw.template(op), engine.parts[op]
    pointers, sizes = PART_PARAMS[op]
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
    if engine.estimate is not None:
        fields = dict(fields, estimate=engine.estimate(lw, op, fields["problem"], fields["candidates"]))
    lw.tuned_call(Tunable(**fields), make, args, group, flops=flops * 2)


class Epilogue(epilogue.Epilogue):
    """The node's epilogue (codegen/epilogue.py) as the GPU kernels take it: a bias vector and a
    residual of the output's shape; a per-column residual is the bias when there is none."""

    def __init__(self, lw, data_inputs: int, has_bias: bool):
        node = lw.node
        self.bias = lw.weight("bias", dtype=lw.dtype(node.output)) if has_bias else None
        super().__init__(lw, data_inputs, fused_modes=("full",) if has_bias else ("full", "row"))
        if self.mode == "row":  # a per-column residual is a bias
            self.bias, self.residual, self.mode = lw.src(self.residual), None, "none"
        self.functor = act_functor(self.kernel_act, node.attrs)  # for CUTLASS-style epilogues
        self.fn = act_fn(self.kernel_act, node.attrs)  # for our own kernels
        self.act_text = self.kernel_act  # what profiles key on, hardtanh's bounds included
        if self.kernel_act == "hardtanh":
            self.act_text += "({}, {})".format(*hardtanh_bounds(node.attrs))
        if self.kernel_act == "leaky_relu":
            self.act_text += "({})".format(node.attrs.get("leaky_slope", 0.01))

    def args(self, lw) -> list:
        return [self.bias or "nullptr", lw.src(self.residual) if self.residual else "nullptr"]


def label_of(op: str, epi: Epilogue) -> str:
    return op + ("" if epi.kernel_act == "none" else f"_{epi.kernel_act}")


def gemm_call(engine: MatrixEngine, lw, epi: Epilogue, out: str, a_var: str, b_var: str, m, n, k, col_b: bool,
              batch=(), a_bs=(), b_bs=(), alpha=1.0, per_image: bool = False) -> None:
    """out[.., M, N] = act(alpha * A[.., M, K] B + bias + res); B is [.., N, K] when `col_b`
    (column-major K x N) else [.., K, N]. At most two batch axes after collapsing. `per_image`:
    one batch axis, the images, of a static M: the profile and the estimate key the call by M
    (problem `m`) and choose by the number of images (the extent) instead of by the rows."""
    dtype = lw.dtype(out)
    ctype = lw.ctype(out)
    out_bs = contiguous_strides(batch)
    sizes, (abs_, bbs, _) = collapse(batch, a_bs, b_bs, out_bs)
    if len(sizes) == 1 and sizes[0] == 1:
        sizes, abs_, bbs = [], [], []
    if len(sizes) > 2:
        raise AitError(f"{lw.node.loc}: the {lw.plan.backend.name} backend batches GEMMs over at most two axes; "
                       f"'{lw.node.name}' needs {len(sizes)}")
    sizes, abs_, bbs = ([1] * (2 - len(sizes)) + list(sizes), [0] * (2 - len(abs_)) + list(abs_),
                        [0] * (2 - len(bbs)) + list(bbs))
    choices = engine.aligns(dtype)
    aligns = (alignment([k], choices), alignment([k if col_b else n], choices),
              alignment([n], choices))
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
    if min(aligns) == 0:  # rows the engine cannot read (odd K in fp16): a plain tiled GEMM
        lw.plain_kernel(f"tiled GEMM: K = {k} or N = {n} not a multiple of {choices[-1]} elements")
        context = dict(element=engine.element[dtype], ctype=ctype, col_b=col_b,
                       act=epi.functor, act_fn=epi.fn)
        lw.call(make_kernel(label_of("gemm_simple", epi), op, lw.template("gemm_simple"), context,
                            params), args)
        epi.finish(lw, out)
        return
    context = dict(engine.context(lw, dtype, epi, aligns), col_b=col_b)
    static = [Dim.of(x).value for x in (n, k) if Dim.of(x).is_static]
    candidates, ladder = engine.candidates(lw, "gemm", dtype, min(aligns),
                                           min(static) if len(static) == 2 else 0)
    layout = f" b={'col' if col_b else 'row'}"
    if per_image:
        problem = (("n", _static(n)), ("k", _static(k)), ("m", _static(m)))
        extent = Dim.of(sizes[1])
    else:
        problem, extent = (("n", _static(n)), ("k", _static(k)),
                           ("l", _static(Dim.of(sizes[0]) * sizes[1]))), Dim.of(m)
    tuned(engine, lw, "gemm", label_of("gemm", epi), context, params, args, dict(
        kind="gemm", family=family_text("gemm", dtype, epi, context, layout),
        problem=problem, extent=extent, scalars=tuple(scalars),
        operands=(("bias", epi.bias is not None), ("res", epi.residual is not None)),
        candidates=candidates, ladder=ladder))
    epi.finish(lw, out)


def lower_linear(engine: MatrixEngine, lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    k = lw.shape(x)[-1]
    n = Dim.of(node.attrs["out_features"])
    epi = Epilogue(lw, 1, bool(node.attrs["bias"]))
    # PyTorch's [N, K] is B column-major; an `in_out` weight ([K, N], GPT-2) is stored as [N, K]
    in_out = node.attrs.get("weight_layout") == "in_out"
    w = lw.weight("weight", (lambda a: a.T) if in_out else None, "nk" if in_out else "",
                  (n.value, k.value), dtype=lw.dtype(out))
    gemm_call(engine, lw, epi, out, lw.src(x), w, elements(lw.shape(x)[:-1]), n, k, col_b=True)


def lower_matmul(engine: MatrixEngine, lw) -> None:
    node = lw.node
    g = matmul_geometry(lw)
    epi = Epilogue(lw, 2, False)
    gemm_call(engine, lw, epi, node.output, lw.src(node.inputs[0]), lw.src(node.inputs[1]), g.m,
              g.n, g.k, g.trans_b, g.batch, g.a_bs, g.b_bs, node.attrs["alpha"])


def folded_scale(engine: MatrixEngine, plan, node) -> Scale | None:
    """The squeeze-excitation gate that the 1x1 conv of `node`'s block (`node` is that conv or
    the gate's mul) takes over (codegen/squeeze_excitation.scales), where the conv runs as the
    GEMM: input and output channels the engine can read. Else None (the mul scales the map)."""
    scale = plan_scales(plan).get(node.name)
    if scale is None:
        return None
    tensors = plan.graph.tensors
    c, o = tensors[scale.map].shape[-1], tensors[scale.conv.output].shape[-1]
    choices = engine.aligns(tensors[scale.conv.output].dtype)
    return scale if alignment([c], choices) and alignment([o], choices) else None


def scaled_pointwise(engine: MatrixEngine, lw, epi: Epilogue, scale: Scale, wt: str, n, hw, c, o):
    """out[i] = act(map[i] (W diag(gate[i]))^T + bias + res[i]) for each image i: the weights
    [O, C] scaled by each image's gate into [N, O, C] (channel_scale's kernel with every image
    reading the same rows; a slot of the workspace), then the GEMM [HW, C] x [O, C]^T batched
    over the images. The map's gated product is never written: C x O products an image instead
    of the mul's HW x C."""
    ctype = lw.ctype(lw.node.output)
    scaled = lw.plan.add_slot(f"{lw.node.name}:scaled_weights", ctype, (n, o, c)).var
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "x"), (f"const {ctype}*", "s")]
    params += [("int64_t", p) for p in ("rows", "P", "C", "s_stride")]
    kernel = make_kernel("scaled_weights", "conv2d", lw.template("channel_scale"),
                         dict(ctype=ctype, shared_x=True), params)
    lw.call(kernel, [scaled, wt, lw.src(scale.gate), cexpr(n * o), cexpr(o), cexpr(c), cexpr(c)])
    gemm_call(engine, lw, epi, lw.node.output, lw.src(scale.map), scaled, hw, o, c, col_b=True,
              batch=(n,), a_bs=(hw * c,), b_bs=(o * c,), per_image=True)


def patches(win: dict) -> bool:
    """Whether a conv's windows tile its input without overlap or padding (kernel == stride)."""
    return (win["kh"] == win["sh"] and win["kw"] == win["sw"] and win["ph"] == win["pw"] == 0
            and win["dh"] == win["dw"] == 1)


def lower_conv2d(engine: MatrixEngine, lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    dims, g, win, sizes, size_params = conv_geometry(lw)
    n, h, w, c, ho, wo, o = dims
    kh, kw = win["kh"], win["kw"]
    dtype, ctype = lw.dtype(out), lw.ctype(out)
    epi = Epilogue(lw, 1, bool(node.attrs["bias"]))
    cv, ov = c.value, o.value
    align_in = alignment([c], engine.aligns(dtype))
    align_out = alignment([o], engine.aligns(dtype))
    target = lw.plan.target
    if gathers_windows(lw.plan.graph, node, target.cap("channel_alignment"),
                       target.cap("im2col_channels")):
        # few input channels (a stem's image, or below the target's im2col_channels): into few
        # outputs directly (stem.py), else explicit im2col rows, then the dense GEMM
        if stem.takes(win, cv, ov, target.cap("direct_stem_outputs")):
            stem.lower(lw, epi, label_of("stem_conv", epi))
            return
        rows, width = im2col.gather(lw, engine.aligns(dtype)[0])
        wt = lw.weight("weight", partial(im2col.filter_rows, width=width), f"rows{width}",
                       (ov, width), dtype=dtype)
        gemm_call(engine, lw, epi, out, rows, wt, n * ho * wo, o, width, col_b=True)
        return
    if g == 1 and align_in and align_out:  # implicit GEMM; filters KRSC (output channel major)
        wt = lw.weight("weight", lambda a: a.transpose(0, 2, 3, 1), "krsc", (ov, kh, kw, cv),
                       dtype=dtype)
        if kh == kw == 1 and win["sh"] == win["sw"] == 1 and win["ph"] == win["pw"] == 0:
            # a pointwise conv over NHWC rows is the GEMM [N*H*W, C] x [O, C]^T: the GEMM
            # kernels (Hopper's included) take it
            scale = folded_scale(engine, lw.plan, node)
            if scale is not None:
                scaled_pointwise(engine, lw, epi, scale, wt, n, h * w, c, o)
                return
            gemm_call(engine, lw, epi, out, lw.src(x), wt, n * h * w, o, c, col_b=True)
            return
        if patches(win):
            # non-overlapping windows (ViT's 16x16 patches): gather each window's KH*KW*C
            # values into a row, then the GEMM [N*HO*WO, KH*KW*C] x [O, KH*KW*C]^T
            rows = lw.plan.add_slot(f"{node.name}:patches", ctype, (n, ho, wo, kh, kw, c)).var
            data_movement.copy(lw, rows, lw.src(x), ctype, [n, ho, kh, wo, kw, c],
                               [h * w * c, kh * w * c, w * c, kw * c, c, 1],
                               [ho * wo * kh * kw * c, wo * kh * kw * c, kw * c, kh * kw * c, c, 1],
                               "patches")
            gemm_call(engine, lw, epi, out, rows, wt, n * ho * wo, o, c * (kh * kw), col_b=True)
            return
        params = conv_kernel_params(ctype, ctype, size_params)
        params += [("int", p) for p in WINDOW]
        aligns = (align_in, align_in, align_out)
        context = engine.context(lw, dtype, epi, aligns)
        candidates, ladder = engine.candidates(lw, "conv2d", dtype, min(aligns), cv, ov)
        window = [win[p.lower()] for p in WINDOW]
        scalars = list(zip(("N", "H", "W", "C", "HO", "WO", "O"), dims)) + list(zip(WINDOW, window))
        args = [lw.dst(out), lw.src(x), wt] + epi.args(lw) + sizes + [str(v) for v in window]
        problem = tuple((k.lower(), _static(v)) for k, v in scalars if k != "N")
        tuned(engine, lw, "conv2d", label_of("conv2d", epi), context, params, args, dict(
            kind="conv2d", family=family_text("conv2d", dtype, epi, context), problem=problem,
            extent=Dim.of(n), scalars=tuple(scalars),
            operands=(("bias", epi.bias is not None), ("res", epi.residual is not None)),
            candidates=candidates, ladder=ladder))
        epi.finish(lw, out)
        return
    if g == cv == ov:
        depthwise.lower(lw, epi, label_of("depthwise_conv2d", epi))
        return
    # grouped or unaligned channels: direct, weights [KH][KW][C/G][O]
    cg = cv // g
    lw.plain_kernel(f"direct conv: {cg} -> {ov // g} channels per group" if g > 1 else
                    f"direct conv: {cv} -> {ov} channels")
    wt = lw.weight("weight", lambda a: a.transpose(2, 3, 1, 0), "hwio", (kh, kw, cg, ov), dtype=dtype)
    params = conv_kernel_params(ctype, ctype, size_params)
    context = dict(element=engine.element[dtype], ctype=ctype, act=epi.functor,
                   act_fn=epi.fn, **win, groups=g)
    kernel = make_kernel(label_of("conv2d_direct", epi), "conv2d", lw.template("conv2d_direct"),
                         context, params)
    lw.call(kernel, [lw.dst(out), lw.src(x), wt] + epi.args(lw) + sizes)
    epi.finish(lw, out)
