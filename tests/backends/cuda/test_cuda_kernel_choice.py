"""Which template each GEMM and attention of a cuda build renders from (no compiler, no GPU):
the tensor-core attention (CUTLASS example 41) wherever its alignment rules hold, the CUDA-core
kernel otherwise; the CUTLASS 3.x sm90 GEMM only on cutlass_sm90 targets, for 16-bit GEMMs
whose K and N are multiples of 8; float16 accumulation (target precision.accumulate) only in
the CUTLASS GEMMs and convs of float16 models."""

from __future__ import annotations

import os
import re

import pytest

from ait_build.pipeline import build_plan, emit, find_target

from cuda_helpers import bf16_spec, fp16_spec, fp16acc_target, heuristic_target, spec_path
from cuda_op_groups import op_spec


_EMITTED: dict = {}  # (spec, its text, target) -> kernel sources, for this module's tests


def kernels(spec: str, target: str, out) -> dict:
    """{kernel file name: its source} of `spec` emitted for `target`; a spec and target whose
    texts several tests read (BERT for h200 and a100) is emitted once (its large weights file
    is most of an emission's time), the sources being a function of the two files."""
    with open(spec, encoding="utf-8") as fh:
        key = (spec, fh.read(), target, _text(target))
    if key not in _EMITTED:
        emission = emit(spec, find_target(target), str(out))
        _EMITTED[key] = {os.path.basename(k): open(os.path.join(str(out), k)).read()
                         for k in emission.kernel_sources}
    return dict(_EMITTED[key])


def _text(target: str) -> str:
    """A target file's text (a stock target's name stands for its file, which no test edits)."""
    if not os.path.isfile(target):
        return ""
    with open(target, encoding="utf-8") as fh:
        return fh.read()


def names(srcs: dict, prefix: str) -> list:
    return sorted(k for k in srcs if re.match(prefix + r"(_[a-z]+)?_[0-9a-f]{8}\.cu$", k))


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_seed_transformer_runs_tensor_core_attention(tmp_path, target):
    srcs = kernels(spec_path("bert_base"), target, tmp_path)
    assert names(srcs, "attention") == []
    (fmha,) = names(srcs, "fmha")
    # head_dim 64: 64 queries x 64 keys per block, q/k/v read from the packed qkv projection
    assert "AttentionKernel<cutlass::half_t, cutlass::arch::Sm80, true, 64, 64,\n" in srcs[fmha]
    assert "p.q_strideM = static_cast<int32_t>(ldq);" in srcs[fmha]


def test_attention_copies_a_bias_the_kernel_cannot_read(tmp_path):
    srcs = kernels(op_spec("norm_attention"), "h200", tmp_path)
    # mha: a [batch, 1, 1, 7] mask has a batch stride of 7 elements (not 16-byte aligned): copied
    # into scratch first; mha_cross: a full [batch, 2, 7, 40] bias, read as it is; mha_packed:
    # causal on square scores; mha_plain: neither (Hopper's kernel first); vit_mha: heads of 36
    # widened to 40 by pad_heads (example 41's kernel: Hopper's has no variant for 40)
    assert names(srcs, "attention") == []
    fmha = names(srcs, "fmha")
    assert len(fmha) == 5
    causal = [k for k in fmha if k.startswith("fmha_causal_")]
    assert len(causal) == 1 and "Attention::CausalFromBottomRight" in srcs[causal[0]]
    # head_dim 64: Hopper's kernel first, with its causal mask
    assert "class Fusion = cutlass::fmha::collective::CausalFusion>" in srcs[causal[0]]
    (biased,) = [k for k in fmha if "p.attn_bias_ptr = as_scalar(bias);" in srcs[k]]
    assert "false, true>;" in srcs[biased] and "hopper::" not in srcs[biased]  # kSupportsBias
    (staged,) = [k for k in fmha if "ait::launch(stage_bias," in srcs[k]]
    assert "if (bs3 != 1 || bs0 % 8 || bs1 % 8 || bs2 % 8 || !aligned16(bias)) {" in srcs[staged]
    (plain,) = [k for k in fmha if "hopper::launch" in srcs[k] and k not in causal]
    assert "Shape<_128, _64, _64>" in srcs[plain] and "false, false>;" in srcs[plain]
    (widened,) = [k for k in fmha if k not in (biased, staged, plain, *causal)]
    assert "hopper::" not in srcs[widened] and "false, false>;" in srcs[widened]


@pytest.mark.parametrize("group", ["attention_masks", "attention_masks_bfloat16"])
def test_imported_masks_run_the_tensor_core_kernel(tmp_path, group):
    """GPT-2's mask: causal, no bias; padding masks over 13 keys: copied before the kernel (calls
    whose strides are not multiples of 8); over 16 keys: read in place."""
    srcs = kernels(op_spec(group), "h200", tmp_path)
    assert names(srcs, "attention") == []
    fmha = {k: ("ait::launch(stage_bias," in srcs[k], "CausalFromBottomRight" in srcs[k],
                "p.attn_bias_ptr" in srcs[k]) for k in names(srcs, "fmha")}
    assert sorted(fmha.values()) == [(False, False, True), (False, True, False), (True, False, True),
                                     (True, True, True)]


def test_swin_window_attention_reads_its_bias_weight_in_place(tmp_path):
    """Both window attentions run example 41 with the relative position bias (and the shifted
    block's per-window mask) as one weight with keys padded to 56; the shifted one's batch b
    reads the bias of window b % 4."""
    emission = emit(op_spec("window_attention"), find_target("h200"), str(tmp_path))
    model = open(os.path.join(str(tmp_path), "src", "model.cpp")).read()
    calls = re.findall(r"(fmha_\w+)\(cx, [^;]*, 0\.176776692f, (\d+), 2744, 56, 1\)", model)
    assert [bs0 for _, bs0 in calls] == ["0", "5488"]  # [1, 2, 49, 56] and [4, 2, 49, 56]
    srcs = {os.path.basename(k): open(os.path.join(str(tmp_path), k)).read()
            for k in emission.kernel_sources}
    plain, shifted = (srcs[f"{name}.cu"] for name, _ in calls)
    assert "periodic_bias_kernel" not in plain and "stage_bias" not in plain
    assert "p.attn_bias_ptr += (blockIdx.z % 4) * period_stride;" in shifted


def test_hopper_attention_only_on_fmha_sm90_targets(tmp_path):
    h200 = kernels(spec_path("bert_base"), "h200", tmp_path / "h")
    a100 = kernels(spec_path("bert_base"), "a100", tmp_path / "a")
    assert all("hopper::launch" in h200[k] for k in names(h200, "fmha"))
    assert all("hopper" not in a100[k] for k in names(a100, "fmha"))
    # the softmax scale is ours (BERT's 1/8), patched over the kernel's 1/sqrt(head_dim)
    assert all("params.mainloop.scale_softmax = scale;" in h200[k] for k in names(h200, "fmha"))


def parts(srcs: dict, dispatch: str) -> dict:
    """{file: source} of the configurations a GEMM/conv dispatch calls (a file each)."""
    called = re.findall(r"^int (\w+)\(const ait::Ctx& cx,", srcs[dispatch], re.M)
    return {f"{name}.cu": srcs[f"{name}.cu"] for name in called
            if f"{name}.cu" in srcs and f"{name}.cu" != dispatch}


def sm90_gemms(srcs: dict) -> list:
    """GEMM kernels holding a CUTLASS 3.x configuration (the heuristic's first, unprofiled)."""
    return sorted(k for k in names(srcs, "gemm") if any("_sm90_" in p for p in parts(srcs, k)))


def sm90_source(srcs: dict, dispatch: str) -> str:
    (src,) = [v for k, v in parts(srcs, dispatch).items() if "_sm90_" in k]
    return src


def test_h200_gemms_use_the_sm90_kernel_where_tma_allows(tmp_path):
    """Without a profile (the heuristic's configurations) and with the checked-in one (the
    configurations measured fastest), every BERT GEMM holds CUTLASS 3.x parts."""
    target = heuristic_target("h200", str(tmp_path))
    srcs = kernels(spec_path("bert_base"), target, tmp_path / "heuristic")
    gemms = names(srcs, "gemm")
    assert len(gemms) == 2 and sm90_gemms(srcs) == gemms
    gelu = sm90_source(srcs, [k for k in gemms if k.startswith("gemm_gelu_")][0])
    assert "LinCombPerColBiasEltAct<EpiAct, Element, float, Element, Element, float>" in gelu
    assert "ait::ActGelu<T>" in gelu
    assert "KernelTmaWarpSpecializedCooperative" in gelu
    profiled = kernels(spec_path("bert_base"), "h200", tmp_path / "profiled")
    gemms = names(profiled, "gemm")
    assert len(gemms) == 2 and sm90_gemms(profiled) == gemms
    (gelu,) = [k for k in gemms if k.startswith("gemm_gelu_")]
    sm90 = [v for k, v in parts(profiled, gelu).items() if "_sm90_" in k]
    assert sm90 and all("ait::ActGelu<T>" in v for v in sm90)


def test_a100_and_float32_gemms_stay_sm80(tmp_path):
    assert sm90_gemms(kernels(spec_path("bert_base"), "a100", tmp_path / "a")) == []
    mlp = kernels(spec_path("mlp"), "h200", tmp_path / "m")  # float32: 3xTF32 on sm80 kernels
    assert names(mlp, "gemm") and sm90_gemms(mlp) == []


def test_h200_unaligned_gemms_stay_sm80(tmp_path):
    # the heuristic's ladder, which puts the aligned pointwise conv on the sm90 kernel (the
    # estimate prefers an sm80 tile for its few input channels)
    srcs = kernels(fp16_spec("tiny_cnn"), heuristic_target("h200", str(tmp_path)), tmp_path / "k")
    # the classifier: N = 10 outputs, rows of 20 bytes (the pointwise conv's GEMM is aligned)
    (gemm,) = [k for k in names(srcs, "gemm") if not k.startswith("gemm_relu_")]
    assert parts(srcs, gemm) and all("cutlass::arch::Sm80" in v for v in parts(srcs, gemm).values())
    assert not any("_sm90_" in k for k in parts(srcs, gemm))
    assert sm90_gemms(srcs) == [k for k in names(srcs, "gemm") if k.startswith("gemm_relu_")]


def test_h200_large_gemm_group_reaches_the_sm90_kernel(tmp_path):
    """The GPU test's gemm_large group: batch 5 gives every GEMM at least 160 tiles of 128x128
    (the sm90 kernel runs), batch 1 only 32 (the sm80 one), so both paths are compared: the
    heuristic's ladder, without the estimate."""
    srcs = kernels(op_spec("gemm_large"), heuristic_target("h200", str(tmp_path)), tmp_path / "g")
    assert len(sm90_gemms(srcs)) == 3
    residual = [k for k in sm90_gemms(srcs) if k.startswith("gemm_gelu_")]
    assert residual and "arguments.epilogue.thread.beta = res ? 1.0f : 0.0f;" in sm90_source(srcs, residual[0])


HALF_ACC = "using ElementAccumulator = cutlass::half_t;"
FLOAT_ACC = "using ElementAccumulator = float;"


def cutlass_kernels(srcs: dict) -> list:
    """The files of CUTLASS configurations (one per GEMM/conv configuration)."""
    return sorted(k for k in srcs if "using ElementAccumulator = " in srcs[k])


def own_kernels(srcs: dict) -> dict:
    """Kernels that are neither CUTLASS configurations nor their dispatch."""
    return {k: v for k, v in srcs.items()
            if k not in cutlass_kernels(srcs) and "constexpr Part kParts[]" not in v}


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_float16_accumulation_is_an_opt_in_of_the_cutlass_kernels(tmp_path, target):
    """Every CUTLASS GEMM and conv of a float16 model accumulates in half_t on a target with
    precision.accumulate float16, under another name than the float32-accumulating default;
    every other kernel (own GEMM for odd K, direct and depthwise convs, attention, norms) is
    the default's, same name and source."""
    opted = fp16acc_target(target, str(tmp_path))
    for group in ("gemm", "conv"):
        default = kernels(op_spec(group), target, tmp_path / f"{group}_default")
        half = kernels(op_spec(group), opted, tmp_path / f"{group}_half")
        assert cutlass_kernels(default) and len(cutlass_kernels(half)) == len(cutlass_kernels(default))
        assert all(FLOAT_ACC in default[k] for k in cutlass_kernels(default))
        assert all(HALF_ACC in half[k] for k in cutlass_kernels(half))
        assert not set(cutlass_kernels(half)) & set(default)  # new names: no dedup with float32
        assert own_kernels(default) and own_kernels(half) == own_kernels(default)
    for k in cutlass_kernels(half):  # the epilogue computes in float32 from the half accumulator
        assert "Element, ElementAccumulator, float, Element, Element," in half[k]


def test_float16_accumulation_reaches_the_sm90_gemm(tmp_path):
    srcs = kernels(op_spec("gemm_large"), fp16acc_target("h200", str(tmp_path)), tmp_path / "g")
    gemms = [src for k in sm90_gemms(srcs) for part, src in parts(srcs, k).items() if "_sm90_" in part]
    assert len(sm90_gemms(srcs)) == 3 and all(HALF_ACC in src for src in gemms)
    for src in gemms:  # wgmma accumulates in half_t, the EVT epilogue computes in float32
        assert "EpilogueTileAuto, ElementAccumulator, float," in src
        assert "LayoutB, kAlign, ElementAccumulator, Tile, Cluster," in src


@pytest.mark.parametrize("spec", ["bfloat16", "float32"])
def test_float16_accumulation_leaves_other_dtypes_alone(tmp_path, spec):
    """bfloat16 (no 16-bit tensor-core accumulate) and float32 (3xTF32) models build the same
    kernels for a target with precision.accumulate float16 as for the default one."""
    path = bf16_spec("tiny_vit") if spec == "bfloat16" else spec_path("tiny_vit")
    default = kernels(path, "h200", tmp_path / "default")
    half = kernels(path, fp16acc_target("h200", str(tmp_path)), tmp_path / "half")
    assert cutlass_kernels(default) and half == default


def test_hopper_attention_picks_its_variant_per_call(tmp_path):
    """head_dim 64 holds two example-88 variants (docs/cuda.md, "Attention"): the
    ping-pong 128x64 kernel up to 1024 keys, the cooperative 128x128 one beyond; any query count
    goes (ViT's 197: no multiple-of-8 rule), and can_implement's is not consulted."""
    srcs = kernels(spec_path("vit_b16"), "h200", tmp_path)
    (fmha,) = names(srcs, "fmha")
    src = srcs[fmha]
    assert ("Kernel1 = KernelOf<Shape<_128, _64, _64>, "
            "cutlass::gemm::KernelTmaWarpSpecializedPingpong>") in src
    assert ("Kernel2 = KernelOf<Shape<_128, _128, _64>, "
            "cutlass::gemm::KernelTmaWarpSpecializedCooperative>") in src
    assert "if (Sk <= 1024) {\n      return hopper::launch<hopper::Kernel1>(" in src
    assert "      return hopper::launch<hopper::Kernel2>(" in src
    # key counts in whole 128-key tiles (BERT's 4096) run a twin without the key mask
    assert "Kernel2Whole = KernelOf<Shape<_128, _128, _64>" in src
    assert "cutlass::fmha::collective::DefaultFusion>;" in src
    assert "if (Sk % 128 == 0)  // no key tile is partial" in src
    assert "Kernel1Whole" not in src
    assert "Sq % 8" not in src and "Op::can_implement(arguments)" not in src


def test_a_channel_pad_writes_each_row_once(tmp_path):
    """A pad of the last dim alone is one kernel writing whole rows; a pad of other dims is one
    padded copy that writes the pad value in the same pass. Neither launches a fill."""
    fills = lambda s: [k for k in s if re.match(r"(pad|fill)_[0-9a-f]{8}\.cu$", k)]
    other = kernels(op_spec("shape"), "h200", tmp_path / "s")
    (pad,) = names(other, "pad_channels")
    assert "constexpr int kIn = 6, kOut = 10, kBefore = 1;" in other[pad]
    assert not fills(other) and len(names(other, "padded_copy")) == 1


def test_a_channel_concat_is_one_kernel(tmp_path):
    """A concat along the innermost axis with widths known at build time is one kernel that finds
    each 16-byte run's piece by constants (gpu/concat_rows.cu.j2), not a strided copy per piece;
    along another axis it keeps the copies."""
    plan = build_plan(op_spec("shape"), find_target("h200"))
    steps = {node: [s.kernel.label for s in plan.steps if s.node == node]
             for node in ("concat", "concat_c", "concat_c_odd", "concat_i")}
    assert steps == {"concat": ["concat"] * 3, "concat_c": ["concat_rows"],
                     "concat_c_odd": ["concat_rows"], "concat_i": ["concat_rows"]}
    srcs = kernels(op_spec("shape"), "h200", tmp_path / "s")
    (wide,) = [k for k in names(srcs, "concat_rows") if "kRow = 32;" in srcs[k]]
    (odd,) = [k for k in names(srcs, "concat_rows") if "kRow = 14;" in srcs[k]]
    assert "constexpr int64_t kRow = 32;" in srcs[wide]
    assert "if (at < 8) v = " in srcs[wide] and "if (at < 24) v = " in srcs[wide]
    assert "constexpr bool kWhole = 6 % kVector == 0 && 8 % kVector == 0" in srcs[odd]


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_stem_conv_gathers_its_windows_then_gemm(tmp_path, target):
    """ResNet-50's 7x7/s2/p3 stem over the 3-channel image: no pad to 8 channels, an im2col into
    rows of 7*7*3 = 147 values and 5 zero columns (152: whole 16-byte rows of float16), then the
    GEMM [N*112*112, 152] x [64, 152]^T with the conv's bias and relu; ViT's 16x16 patches over 3
    channels the same (768 values a row, no zero columns) instead of a GEMM over 8 padded
    channels (K 2048)."""
    plan = build_plan(spec_path("resnet50"), find_target(target))
    stem = [s for s in plan.steps if s.node == "conv1"]
    assert [s.kernel.label for s in stem] == ["im2col", "gemm_relu"]
    assert stem[1].args[1] == stem[0].args[0]  # the GEMM reads the rows
    assert stem[1].args[5:8] == ("12544*d_batch", "64", "152")
    assert dict(stem[0].kernel.context)["vec"] == 8  # 16-byte chunks
    assert not [s for s in plan.steps if s.kernel.label.startswith("pad")]
    srcs = kernels(spec_path("resnet50"), target, tmp_path / "r")
    (im2col,) = names(srcs, "im2col")
    assert "constexpr int kC = 3, kKH = 7, kKW = 7, kSH = 2, kSW = 2;" in srcs[im2col]
    assert "constexpr int kK = kKH * kKW * kC, kWidth = 152, kVec = 8;" in srcs[im2col]
    vit = build_plan(spec_path("vit_b16"), find_target(target)).steps
    patch = [s for s in vit if s.node == "conv_proj"]
    assert [s.kernel.label for s in patch] == ["im2col", "gemm"]
    assert patch[1].args[5:8] == ("196*d_batch", "768", "768")


@pytest.mark.parametrize("target,direct", [("h200", True), ("h100", True), ("a100", False)])
def test_stems_into_few_outputs_run_directly_on_hopper(target, direct):
    """The stock Hopper targets run every stem of the direct_stems group (3 or 1 channels into 8 to
    32 outputs) as one direct kernel (templates/gpu/stem_conv.cu.j2), no im2col rows and no GEMM;
    the a100 gathers them into rows for a GEMM (its direct_stem_outputs is 0: not timed there)."""
    plan = build_plan(op_spec("direct_stems"), find_target(target))
    convs = [n.name for n in plan.graph.nodes if n.op == "conv2d"]
    stems = {s.node for s in plan.steps if s.kernel.template.endswith("stem_conv.cu.j2")}
    rows = {s.node for s in plan.steps if s.kernel.label == "im2col"}
    assert len(convs) == 8
    assert (stems, rows) == ((set(convs), set()) if direct else (set(), set(convs)))


def test_patch_convs_gather_then_gemm(tmp_path):
    """A conv over aligned channels whose windows tile the input (kernel == stride) gathers each
    window into a row with the strided copy and runs the GEMM kernels; other windows stay
    implicit-GEMM convs."""
    plan_steps = build_plan(op_spec("conv"), find_target("h200")).steps
    patch = [s for s in plan_steps if s.node == "c_patch"]
    assert [s.kernel.label for s in patch] == ["patches", "gemm"]
    assert patch[1].args[5:8] == ("9*d_batch", "16", "72")  # M, N = O, K = 3 * 3 * 8
    srcs = kernels(op_spec("conv"), "h200", tmp_path)
    assert names(srcs, "patches") and names(srcs, "conv2d")


def test_gates_fold_into_the_projection_over_larger_maps():
    """A squeeze-excitation's mul whose product only the block's 1x1 projection reads, over a map
    of more pixels than the projection has outputs, emits nothing: the projection scales its
    weights by each image's gate (channel_scale's kernel, every image reading the same rows)
    and runs one GEMM batched over the images, keyed by its rows per image (problem `m`) and
    chosen by the number of images. The muls that are outputs, and the 7x7 map into 64 outputs
    (49 pixels), keep the pass over the map. (Numerics: the group's GPU test.)"""
    plan = build_plan(op_spec("squeeze_excitation"), "h200", tune=False)
    steps: dict = {}
    for step in plan.steps:
        steps.setdefault(step.node, []).append(step)
    assert "a_mul" not in steps and "b_mul" not in steps
    for mul in ("mnv3", "effnet", "c_mul"):
        assert [s.kernel.name.split("_")[:2] for s in steps[mul]] == [["channel", "scale"]]
    for proj, fmap, out, residual in (("a_proj", "w", 24, "nullptr"),
                                      ("b_proj", "y", 64, plan.values["y"].var)):
        scale, gemm = steps[proj]
        assert scale.kernel.name.startswith("scaled_weights_")
        scaled, weight, gate = scale.args[:3]
        assert gate == plan.values[proj.replace("proj", "fc2")].var
        assert scale.args[4:] == (str(out), "64", "64")  # P = O rows an image, C, gate stride
        assert gemm.tuning.tunable.problem == (("n", out), ("k", 64), ("m", 196))
        assert str(gemm.tuning.tunable.extent) == "batch"
        # out, the map, the scaled weights, bias, residual; M N K; bi = the images, their strides
        assert gemm.args[1:3] == (plan.values[fmap].var, scaled) and gemm.args[4] == residual
        assert gemm.args[5:8] == ("196", str(out), "64")
        assert gemm.args[10:] == ("d_batch", "0", str(196 * 64), "0", str(out * 64))
    assert [s.kernel.name.split("_")[0] for s in steps["c_proj"]] == ["gemm"]
