"""The specs the GPU tests build: every op the cuda backend lowers, in float16, in six small
models (each node's result is an output), with shapes that reach each kernel variant (aligned
CUTLASS GEMMs and convs, the unaligned fallbacks, direct grouped/depthwise convs); plus the
small zoo specs (float32 as written, float16 and bfloat16) and the seed models (as written, in
float16, and one in bfloat16). `all_specs()` lists them so the GPU machine can build everything
in one parallel SCons run:

    python -m SCons -j16 target=h200,a100 spec=$(python tests/backends/cuda/cuda_op_groups.py)
"""

from __future__ import annotations

import os
import sys

import yaml

from cuda_helpers import ROOT, bf16_spec, fp16_spec, spec_path

sys.path.insert(0, os.path.join(ROOT, "tests"))  # the op group the cpu tests build too
from backends.family_ops import (CONCAT_NORMS, EXPERTS, IMPORT_FAMILIES,  # noqa: E402
                                 LAYOUT_SWAPS, MOVEMENT_CHAINS, n)

B = {"batch": {"min": 1, "max": 8, "opt": 3}}


def se_block(prefix: str, x: str, hidden: int, c: int, gate: str, out: int, residual=None) -> list:
    """A squeeze-excitation block of the map `x` (c channels) and its 1x1 projection to `out`
    channels (plus `residual`), as the importers write it: pool, two 1x1 convs, the gate."""
    p = prefix + "_"
    return [n(p + "pool", "global_avg_pool", [x], keepdims=True),
            n(p + "fc1", "conv2d", [p + "pool"], out_channels=hidden, kernel=1, activation="relu"),
            n(p + "fc2", "conv2d", [p + "fc1"], out_channels=c, kernel=1, activation=gate),
            n(p + "mul", "mul", [x, p + "fc2"]),
            n(p + "proj", "conv2d", [p + "mul"] + ([residual] if residual else []),
              out_channels=out, kernel=1)]


# every op the cuda backend lowers, in float16, with shapes that reach each kernel variant
# (aligned CUTLASS GEMMs and convs, the unaligned fallbacks, direct grouped/depthwise convs)
GROUPS = {
    "elementwise": dict(
        inputs={"x": {"shape": ["batch", 5, 8]}, "y": {"shape": ["batch", 5, 8]},
                "row": {"shape": [8]}, "col": {"shape": ["batch", 5, 1]},
                "i": {"shape": ["batch", 5, 8], "dtype": "int32"}},
        graph=[n("relu", "relu", ["x"]), n("silu", "silu", ["x"]), n("sigmoid", "sigmoid", ["x"]),
               n("tanh", "tanh", ["x"]), n("hardswish", "hardswish", ["x"]),
               n("gelu", "gelu", ["x"]), n("gelu_tanh", "gelu", ["x"], approximate="tanh"),
               n("add", "add", ["x", "y"]), n("sub_row", "sub", ["x", "row"]),
               n("mul_col", "mul", ["x", "col"]), n("div", "div", ["x", "y"]),
               n("add_scalar", "add", ["x"], scalar=2.5),
               n("to_f32", "cast", ["x"], dtype="float32"),
               n("to_i32", "cast", ["x"], dtype="int32"), n("to_bool", "cast", ["x"], dtype="bool"),
               n("i_to_f", "cast", ["i"], dtype="float16"), n("i_add", "add", ["i", "i"]),
               n("bn", "batch_norm", ["x"], eps=1e-3)],
        outputs=["relu", "silu", "sigmoid", "tanh", "hardswish", "gelu", "gelu_tanh", "add",
                 "sub_row", "mul_col", "div", "add_scalar", "to_f32", "to_i32", "to_bool",
                 "i_to_f", "i_add", "bn"]),
    "shape": dict(
        inputs={"x": {"shape": ["batch", 4, 6]}, "x1": {"shape": ["batch", 1, 6]},
                "c8": {"shape": ["batch", 4, 8]}, "c16": {"shape": ["batch", 4, 16]},
                "i2": {"shape": ["batch", 4, 2], "dtype": "int64"}},
        graph=[n("reshape", "reshape", ["x"], shape=["batch", 24]),
               n("permute", "permute", ["x"], dims=[2, 0, 1]),
               n("transpose", "transpose", ["x"], dim0=1, dim1=2),
               n("expand", "expand", ["x1"], shape=["batch", 4, 6]),
               n("concat", "concat", ["x", "x1", "x"], axis=1),
               # along the channels: one kernel of 16-byte runs, and of single elements where a
               # width (6) is not whole vectors (gpu/concat_rows.cu.j2)
               n("concat_c", "concat", ["c8", "c16", "c8"], axis=2),
               n("concat_c_odd", "concat", ["x", "c8"], axis=-1),
               n("concat_i", "concat", ["i2", "i2"], axis=-1),  # int64: 16-byte runs of 2
               {"name": "split", "op": "split", "inputs": ["x"], "axis": 2, "sizes": [1, 2, 3],
                "outputs": ["split_a", "split_b", "split_c"]},
               n("slice", "slice", ["x"], axis=2, start=1, end=5, step=2),
               n("pad", "pad", ["x"], pads=[0, 0, 1, 2, 3, 0], value=-1.5),
               n("pad_last", "pad", ["x"], pads=[0, 0, 0, 0, 1, 3], value=0.5),  # one pass
               n("param", "parameter", [], shape=[4, 6], weights={"value": "table"}),
               n("plus_param", "add", ["x", "param"])],
        outputs=["reshape", "permute", "transpose", "expand", "concat", "concat_c", "concat_c_odd",
                 "concat_i",
                 "split_a", "split_b", "split_c", "slice", "pad", "pad_last", "param",
                 "plus_param"]),
    "gemm": dict(
        inputs={"x": {"shape": ["batch", 6, 16]}, "res": {"shape": ["batch", 6, 24]},
                "res_row": {"shape": [24]}, "res_odd": {"shape": ["batch", 1, 24]},
                "b": {"shape": ["batch", 16, 8]}, "bt": {"shape": ["batch", 8, 16]},
                "a4": {"shape": ["batch", 2, 6, 16]}, "b3": {"shape": [2, 16, 8]},
                "w": {"shape": [16, 8]}, "x7": {"shape": ["batch", 6, 7]}},
        graph=[n("linear", "linear", ["x"], out_features=24),
               n("linear_relu", "linear", ["x"], out_features=24, bias=False, activation="relu"),
               n("linear_res", "linear", ["x", "res"], out_features=24, activation="gelu"),
               n("linear_row", "linear", ["x", "res_row"], out_features=24),
               n("linear_odd", "linear", ["x", "res_odd"], out_features=24, activation="tanh"),
               n("linear_k7", "linear", ["x7"], out_features=5, activation="silu"),
               n("matmul", "matmul", ["x", "b"]),
               n("matmul_t", "matmul", ["x", "bt"], transpose_b=True, alpha=0.5),
               n("matmul_bcast", "matmul", ["a4", "b3"], activation="sigmoid"),
               n("matmul_shared", "matmul", ["x", "w"]),
               n("bmm", "bmm", ["x", "b", "matmul"], activation="hardswish"),
               n("linear_in_out", "linear", ["x"], out_features=24, weight_layout="in_out")],
        outputs=["linear", "linear_relu", "linear_res", "linear_row", "linear_odd", "linear_k7",
                 "matmul", "matmul_t", "matmul_bcast", "matmul_shared", "bmm", "linear_in_out"]),
    # big enough at batch 5 for the h200 build's sm90 GEMM (at least 160 tiles of 128x128:
    # calls that fill the device), at batch 1 the sm80 one; bias, residual and activation in
    # the epilogue, a batched GEMM with row-major B
    "gemm_large": dict(
        inputs={"x": {"shape": ["batch", 256, 64]}, "res": {"shape": ["batch", 256, 2048]},
                "b": {"shape": ["batch", 64, 2048]}},
        graph=[n("lin_res_gelu", "linear", ["x", "res"], out_features=2048, activation="gelu"),
               n("lin_plain", "linear", ["x"], out_features=2048, bias=False),
               n("bmm_relu", "matmul", ["x", "b"], activation="relu")],
        outputs=["lin_res_gelu", "lin_plain", "bmm_relu"]),
    # convs big enough for the large (128x128) tile at batch 5 and the small one at batch 1,
    # with 64 input channels: 3x3, a 1x1 projection onto a residual, stride 2 with dilation
    "conv_large": dict(
        inputs={"img": {"shape": ["batch", 64, 64, 64]}, "res": {"shape": ["batch", 64, 64, 128]}},
        graph=[n("c3_relu", "conv2d", ["img"], out_channels=64, kernel=3, padding=1,
                 activation="relu"),
               n("c1_res", "conv2d", ["img", "res"], out_channels=128, kernel=1,
                 activation="relu"),
               n("c3_s2", "conv2d", ["img"], out_channels=128, kernel=3, stride=2, padding=2,
                 dilation=2, bias=False)],
        outputs=["c3_relu", "c1_res", "c3_s2"]),
    "conv": dict(
        inputs={"img": {"shape": ["batch", 9, 9, 8]}, "res": {"shape": ["batch", 9, 9, 16]},
                "img3": {"shape": ["batch", 9, 9, 3]}, "res8": {"shape": ["batch", 5, 5, 8]},
                "res3": {"shape": ["batch", 9, 9, 3]}},
        graph=[n("c3", "conv2d", ["img"], out_channels=16, kernel=3, padding=1, activation="relu"),
               n("c3s2d2", "conv2d", ["img"], out_channels=16, kernel=3, stride=2, dilation=2,
                 padding=2, bias=False),
               n("c1", "conv2d", ["img", "res"], out_channels=16, kernel=1, activation="hardswish"),
               n("c_rect", "conv2d", ["img"], out_channels=8, kernel=[5, 3], padding=[2, 1]),
               n("c_odd", "conv2d", ["img3"], out_channels=6, kernel=3, padding=1),
               # outputs padded to 8 channels and sliced back (passes/pad_out_channels.py): a
               # segmentation head's 21 classes, an image's 3 channels with a residual
               n("c_head21", "conv2d", ["img"], out_channels=21, kernel=1, activation="sigmoid"),
               n("c_rgb_res", "conv2d", ["img", "res3"], out_channels=3, kernel=3, padding=1),
               n("c_patch", "conv2d", ["img"], out_channels=16, kernel=3, stride=3),  # gather + GEMM
               n("grouped", "conv2d", ["img"], out_channels=12, kernel=3, groups=2, padding=1),
               n("depthwise", "conv2d", ["img"], out_channels=8, kernel=3, groups=8, padding=1,
                 activation="silu"),
               n("dw_s2", "conv2d", ["img", "res8"], out_channels=8, kernel=3, groups=8,
                 stride=2, padding=1, bias=False),
               n("maxpool", "max_pool2d", ["img"], kernel=3, stride=2, padding=1),
               n("avgpool", "avg_pool2d", ["img"], kernel=3, stride=2, padding=1),
               n("avgpool_x", "avg_pool2d", ["img"], kernel=2, stride=2, padding=1,
                 count_include_pad=False),
               n("gap", "global_avg_pool", ["img"])],
        outputs=["c3", "c3s2d2", "c1", "c_rect", "c_odd", "c_head21", "c_rgb_res", "c_patch",
                 "grouped", "depthwise", "dw_s2", "maxpool", "avgpool", "avgpool_x", "gap"]),
    # stem convs over few input channels (passes/pad_channels.gathers_windows) into more outputs
    # than a target's direct_stem_outputs: no pad, an explicit im2col (templates/gpu/im2col.cu.j2)
    # into GEMM rows, then the GEMM with the conv's epilogue. ResNet-50's 7x7/s2/p3 and the
    # 3x3/s2/p1 stems over 3 channels, a residual, a dilated window over one channel and ViT-like
    # patches; odd image sizes, so windows leave the image on every side
    "stem_conv": dict(
        inputs={"img": {"shape": ["batch", 19, 17, 3]}, "gray": {"shape": ["batch", 12, 11, 1]},
                "res": {"shape": ["batch", 19, 17, 16]}, "wide": {"shape": ["batch", 15, 150, 3]},
                "res40": {"shape": ["batch", 19, 17, 40]}},
        graph=[n("s7_relu", "conv2d", ["img"], out_channels=40, kernel=7, stride=2, padding=3,
                 activation="relu"),
               n("s3_silu", "conv2d", ["img"], out_channels=48, kernel=3, stride=2, padding=1,
                 activation="silu", bias=False),
               n("s3_res", "conv2d", ["img", "res40"], out_channels=40, kernel=3, padding=1,
                 activation="relu"),
               n("gray_d2", "conv2d", ["gray"], out_channels=40, kernel=5, padding=4, dilation=2),
               n("patch4", "conv2d", ["img"], out_channels=40, kernel=4, stride=4),
               # rows of 148 output pixels: two whole tiles of 64 and a partial one; an 11x11/s4 window
               # whose strip takes tiles of 32 pixels in float32 (backends/gpu/im2col.tile_pixels)
               n("wide_s1", "conv2d", ["wide"], out_channels=40, kernel=3),
               n("wide_11s4", "conv2d", ["wide"], out_channels=40, kernel=11, stride=4, padding=2),
               # 16 aligned channels into 64: gathered where a target sets im2col_channels (16-byte
               # chunks of whole taps; test_kernels_on_host's h200 copy), else an implicit-GEMM
               # conv; into 16: always one
               n("c16_64", "conv2d", ["res"], out_channels=64, kernel=3, padding=1, activation="relu"),
               n("c16_64_s2", "conv2d", ["res"], out_channels=64, kernel=3, stride=2, padding=1),
               n("c16_16", "conv2d", ["res"], out_channels=16, kernel=3, padding=1)],
        outputs=["s7_relu", "s3_silu", "s3_res", "gray_d2", "patch4", "wide_s1", "wide_11s4",
                 "c16_64", "c16_64_s2", "c16_16"]),
    # the same stems into 8 to 32 outputs (MobileNet's and EfficientNet's): on a target with
    # direct_stem_outputs (h200) a direct kernel on the CUDA cores (templates/gpu/stem_conv.cu.j2,
    # no CUTLASS, so the host-emulation test runs it too), elsewhere (a100) im2col + GEMM
    "direct_stems": dict(
        inputs={"img": {"shape": ["batch", 19, 17, 3]}, "gray": {"shape": ["batch", 12, 11, 1]},
                "res": {"shape": ["batch", 19, 17, 16]}, "wide": {"shape": ["batch", 15, 150, 3]}},
        graph=[n("s7_relu", "conv2d", ["img"], out_channels=16, kernel=7, stride=2, padding=3,
                 activation="relu"),
               n("s3_silu", "conv2d", ["img"], out_channels=32, kernel=3, stride=2, padding=1,
                 activation="silu", bias=False),
               n("s3_hardswish", "conv2d", ["img"], out_channels=24, kernel=3, stride=2,
                 padding=1, activation="hardswish"),
               n("s3_res", "conv2d", ["img", "res"], out_channels=16, kernel=3, padding=1,
                 activation="relu"),
               n("gray_d2", "conv2d", ["gray"], out_channels=8, kernel=5, padding=4, dilation=2),
               n("patch4", "conv2d", ["img"], out_channels=8, kernel=4, stride=4),
               n("wide_s1", "conv2d", ["wide"], out_channels=16, kernel=3),
               n("wide_11s4", "conv2d", ["wide"], out_channels=8, kernel=11, stride=4, padding=2)],
        outputs=["s7_relu", "s3_silu", "s3_hardswish", "s3_res", "gray_d2", "patch4", "wide_s1",
                 "wide_11s4"]),
    # grouped convs on tensor cores (backends/cuda/grouped.py): ResNeXt's group widths 8, 16, 32
    # and 64 at stride 1 and 2, RegNet's 24 and 48, three groups of 24 (a block of two groups
    # and a partial one), twice as many outputs as inputs per group, a dilated and a 1x1 one,
    # ResNeXt-50's 4 and 2 per group (run as merged groups of 8), wide groups split into blocks
    # of outputs, with bias, residual and activations in the epilogue; big enough for several
    # spatial tiles
    "grouped_conv": dict(
        inputs={"x": {"shape": ["batch", 20, 18, 128]}, "res": {"shape": ["batch", 20, 18, 128]},
                "res_s2": {"shape": ["batch", 10, 9, 128]}, "x72": {"shape": ["batch", 9, 9, 72]},
                "x96": {"shape": ["batch", 7, 7, 96]}, "x240": {"shape": ["batch", 9, 9, 240]}},
        graph=[n("w8", "conv2d", ["x"], out_channels=128, kernel=3, padding=1, groups=16,
                 activation="relu"),
               n("w16_s2", "conv2d", ["x", "res_s2"], out_channels=128, kernel=3, stride=2,
                 padding=1, groups=8, bias=False, activation="silu"),
               n("w32_res", "conv2d", ["x", "res"], out_channels=128, kernel=3, padding=1,
                 groups=4, activation="relu"),
               n("w64_s2", "conv2d", ["x"], out_channels=128, kernel=3, stride=2, padding=1,
                 groups=2, activation="hardswish"),
               n("w24", "conv2d", ["x72"], out_channels=72, kernel=3, padding=1, groups=3),
               n("w48", "conv2d", ["x96"], out_channels=96, kernel=3, padding=1, groups=2,
                 activation="relu"),
               n("w8_to_16", "conv2d", ["x"], out_channels=256, kernel=3, padding=1, groups=16),
               n("w16_dil", "conv2d", ["x"], out_channels=128, kernel=3, padding=2, dilation=2,
                 groups=8, bias=False),
               n("w32_1x1", "conv2d", ["x"], out_channels=128, kernel=1, groups=4,
                 activation="gelu"),
               n("w4_res", "conv2d", ["x", "res"], out_channels=128, kernel=3, padding=1,
                 groups=32, activation="relu"),
               n("w2_s2", "conv2d", ["x"], out_channels=128, kernel=3, stride=2, padding=1,
                 groups=64, bias=False, activation="sigmoid"),
               # groups whose filters exceed a block's shared memory, split into blocks of
               # outputs: 64 -> 256 as 4 x 64, RegNetX-8GF's 120 -> 120 as 3 x 40
               n("w64_split", "conv2d", ["x"], out_channels=512, kernel=3, padding=1, groups=2),
               n("w120_split", "conv2d", ["x240"], out_channels=240, kernel=3, stride=2,
                 padding=1, groups=2, activation="relu")],
        outputs=["w8", "w16_s2", "w32_res", "w64_s2", "w24", "w48", "w8_to_16", "w16_dil",
                 "w32_1x1", "w4_res", "w2_s2", "w64_split", "w120_split"]),
    "norm_attention": dict(
        inputs={"x": {"shape": ["batch", 7, 64]}, "r": {"shape": ["batch", 7, 64]},
                "kv": {"shape": ["batch", 40, 64]}, "qkv": {"shape": ["batch", 37, 192]},
                "mask": {"shape": ["batch", 1, 1, 7]}, "full": {"shape": ["batch", 2, 7, 40]},
                "x24": {"shape": ["batch", 24, 128]}, "kv40": {"shape": ["batch", 40, 128]},
                "x13": {"shape": ["batch", 13, 128]}, "w768": {"shape": ["batch", 3, 768]},
                "r768": {"shape": ["batch", 3, 768]}, "w100": {"shape": ["batch", 3, 100]}},
        graph=[n("ln", "layer_norm", ["x"]), n("ln_res", "layer_norm", ["x", "r"], eps=1e-6),
               n("ln_plain", "layer_norm", ["x"], affine=False),
               # widths 768 (warp-per-row kernel, 3 chunks a lane) and 100 (not a multiple of
               # 8: the block-per-row kernel)
               n("ln768", "layer_norm", ["w768", "r768"]), n("ln100", "layer_norm", ["w100"]),
               n("softmax", "softmax", ["x"]), n("softmax_mid", "softmax", ["x"], axis=1),
               n("mha", "multi_head_attention", ["x", "r", "x", "mask"], num_heads=2,
                 head_dim=32),
               n("mha_cross", "multi_head_attention", ["x", "kv", "kv", "full"], num_heads=2,
                 head_dim=32, scale=0.3),
               n("mha_packed", "multi_head_attention", ["qkv"], num_heads=1, head_dim=64,
                 packed=True, causal=True),
               # no bias, 24 queries (a multiple of 8), head_dim 64: Hopper's FMHA on h200 (40
               # keys: one masked key tile), example 41's kernel on a100
               n("mha_plain", "multi_head_attention", ["x24", "kv40", "kv40"], num_heads=2,
                 head_dim=64, scale=0.2),
               # 13 queries, not a multiple of 8 (ViT has 197): Hopper's FMHA with a partial
               # query tile, rows past 13 zero-filled by TMA and clipped by the output store
               n("mha_odd", "multi_head_attention", ["x13", "kv40", "kv40"], num_heads=2,
                 head_dim=64),
               # MobileViT's heads of 36 features between a packed q/k/v projection and an
               # output projection: pad_heads widens them to 40 for the tensor-core kernels
               n("vit_qkv", "linear", ["x"], out_features=216),
               n("vit_mha", "multi_head_attention", ["vit_qkv"], num_heads=2, head_dim=36,
                 packed=True),
               n("vit_proj", "linear", ["vit_mha"], out_features=64)],
        outputs=["ln", "ln_res", "ln_plain", "ln768", "ln100", "softmax", "softmax_mid", "mha",
                 "mha_cross", "mha_packed", "mha_plain", "mha_odd", "vit_proj"]),
    # attention masks as the importers write them (passes/attention_masks.py): GPT-2's causal
    # mask with its packed-sequence test (causal attention, no bias), DistilBERT's padding mask
    # and-ed with q >= 0 ([batch, 1, 1, 13]: not 16-byte aligned rows, copied before the kernel),
    # the two together, and a padding mask over 16 keys (read in place); q = k = v = x, so no GEMM
    "attention_masks": dict(
        inputs={"x": {"shape": ["batch", 13, 128]}, "pad": {"shape": ["batch", 13], "dtype": "int64"},
                "x16": {"shape": ["batch", 16, 128]},
                "pad16": {"shape": ["batch", 16], "dtype": "int64"}},
        graph=[n("arange", "iota", [], shape=[13], dtype="int64"),
               n("pos", "reshape", ["arange"], shape=[1, 13]),
               n("pos_b", "expand", ["pos"], shape=["batch", -1]),
               n("kv", "reshape", ["pos_b"], shape=["batch", 1, 1, 13]),
               n("qi", "reshape", ["pos_b"], shape=["batch", 1, 13, 1]),
               n("first", "slice", ["pos_b"], axis=1, start=0, end=1),
               n("before", "sub", ["first"], scalar=1),
               n("cat", "concat", ["before", "pos_b"], axis=1),
               n("d1", "slice", ["cat"], axis=1, start=1),
               n("d0", "slice", ["cat"], axis=1, start=0, end=-1),
               n("diff", "sub", ["d1", "d0"]), n("jump", "not_equal", ["diff"], scalar=1),
               n("jumps", "cast", ["jump"], dtype="int64"),
               n("seg_q", "reshape", ["jumps"], shape=["batch", 1, 13, 1]),
               n("seg_k", "reshape", ["jumps"], shape=["batch", 1, 1, 13]),
               n("same", "equal", ["seg_q", "seg_k"]),
               n("lower", "less_equal", ["kv", "qi"]),
               n("gpt2_mask", "logical_and", ["lower", "same"]),
               n("zero", "constant", [], shape=[1, 1, 1, 1], value=0.0),
               n("ninf", "constant", [], shape=[1, 1, 1, 1], value=float("-inf")),
               n("gpt2_bias", "where", ["gpt2_mask", "zero", "ninf"]),
               n("causal", "multi_head_attention", ["x", "x", "x", "gpt2_bias"], num_heads=2,
                 head_dim=64),
               # padding: key 0 always kept, so no row is masked whole
               n("keep", "cast", ["pad"], dtype="bool"),
               n("keep_k", "reshape", ["keep"], shape=["batch", 1, 1, 13]),
               n("key0", "equal", ["kv"], scalar=0), n("keep0", "logical_or", ["keep_k", "key0"]),
               n("q_ok", "greater_equal", ["qi"], scalar=0),
               n("pad_mask", "logical_and", ["q_ok", "keep0"]),
               n("pad_bias", "where", ["pad_mask", "zero", "ninf"]),
               n("padded", "multi_head_attention", ["x", "x", "x", "pad_bias"], num_heads=2,
                 head_dim=64, scale=0.1),
               n("both_mask", "logical_and", ["lower", "keep0"]),
               n("both_bias", "where", ["both_mask", "zero", "ninf"]),
               n("causal_padded", "multi_head_attention", ["x", "x", "x", "both_bias"],
                 num_heads=2, head_dim=64),
               n("keep16", "cast", ["pad16"], dtype="bool"),
               n("keep16_k", "reshape", ["keep16"], shape=["batch", 1, 1, 16]),
               n("arange16", "iota", [], shape=[16], dtype="int64"),
               n("key16_0", "equal", ["arange16"], scalar=0),
               n("keep16_0", "logical_or", ["keep16_k", "key16_0"]),
               n("bias16", "where", ["keep16_0", "zero", "ninf"]),
               n("padded16", "multi_head_attention", ["x16", "x16", "x16", "bias16"],
                 num_heads=2, head_dim=64)],
        outputs=["causal", "padded", "causal_padded", "padded16"]),
    # Swin's window attention as torchvision's import writes it (fuse_attention with
    # score_layouts.py): 2x2 windows of 7x7 tokens over a 14x14 image, 2 heads of 32, the scores
    # permuted to [q, k, batch, heads] plus the relative position bias; the shifted block rolls
    # the image by 3 and adds a per-window mask (bias_period 4); the bias is one weight
    "window_attention": dict(
        inputs={"x": {"shape": ["batch", 14, 14, 64]}},
        graph=[n(f"{p}{name}", op, [f"{p}{i}" if i != "x" else "x" for i in ins], **attrs)
               for p, shifted in (("plain.", False), ("shifted.", True))
               for name, op, ins, attrs in [
                   ("rolled", "roll", ["x"], dict(shifts=[-3, -3] if shifted else [0, 0],
                                                  dims=[1, 2])),
                   ("part", "reshape", ["rolled"], dict(shape=["batch", 2, 7, 2, 7, 64])),
                   ("wins", "permute", ["part"], dict(dims=[0, 1, 3, 2, 4, 5])),
                   ("tokens", "reshape", ["wins"], dict(shape=[-1, 49, 64])),
                   ("qkv", "linear", ["tokens"], dict(out_features=192)),
                   ("split", "reshape", ["qkv"], dict(shape=[0, 49, 3, 2, 32])),
                   ("q_sel", "slice", ["split"], dict(axis=2, start=0, end=1)),
                   ("q_h", "reshape", ["q_sel"], dict(shape=[0, 49, 2, 32])),
                   ("k_sel", "slice", ["split"], dict(axis=2, start=1, end=2)),
                   ("k_h", "reshape", ["k_sel"], dict(shape=[0, 49, 2, 32])),
                   ("v_sel", "slice", ["split"], dict(axis=2, start=2, end=3)),
                   ("v_h", "reshape", ["v_sel"], dict(shape=[0, 49, 2, 32])),
                   ("q_s", "mul", ["q_h"], dict(scalar=32 ** -0.5)),
                   ("qp", "permute", ["q_s"], dict(dims=[0, 2, 1, 3])),
                   ("kp", "permute", ["k_h"], dict(dims=[0, 2, 3, 1])),
                   ("qk", "matmul", ["qp", "kp"], {}),
                   ("sc", "permute", ["qk"], dict(dims=[2, 3, 0, 1])),
                   ("relpos", "parameter", [], dict(shape=[49, 49, 1, 2])),
                   ("biased", "add", ["sc", "relpos"], {})] + ([
                       ("split_b", "reshape", ["biased"], dict(shape=[49, 49, "batch", 4, 2])),
                       ("window_mask", "parameter", [], dict(shape=[49, 49, 1, 4, 1])),
                       ("masked", "add", ["split_b", "window_mask"], {}),
                       ("merged", "reshape", ["masked"], dict(shape=[49, 49, -1, 2]))]
                      if shifted else []) + [
                   ("probs", "softmax", ["merged" if shifted else "biased"], dict(axis=1)),
                   ("pb", "permute", ["probs"], dict(dims=[2, 3, 0, 1])),
                   ("vp", "permute", ["v_h"], dict(dims=[0, 2, 1, 3])),
                   ("ctx", "matmul", ["pb", "vp"], {}),
                   ("back", "permute", ["ctx"], dict(dims=[0, 2, 1, 3])),
                   ("merge", "reshape", ["back"], dict(shape=["batch", 2, 2, 7, 7, 64])),
                   ("unwins", "permute", ["merge"], dict(dims=[0, 1, 3, 2, 4, 5])),
                   ("image", "reshape", ["unwins"], dict(shape=["batch", 14, 14, 64])),
                   ("out", "roll", ["image"], dict(shifts=[3, 3] if shifted else [0, 0],
                                                   dims=[1, 2]))]],
        outputs=["plain.out", "shifted.out"]),
    # clamps, minimum/maximum, masks built in the model, fills and rolls (no GEMM: the nvcc
    # test compiles it in seconds); the [in, out] linear is in the gemm group
    "masks_and_clamps": dict(
        inputs={"x": {"shape": ["batch", 5, 8]}, "y": {"shape": ["batch", 5, 8]},
                "col": {"shape": ["batch", 5, 1]},
                "i": {"shape": ["batch", 5, 8], "dtype": "int32"},
                "img": {"shape": ["batch", 6, 4, 3]}},
        graph=[n("clamp", "clamp", ["x"], min=-0.5, max=0.7), n("clamp_i", "clamp", ["i"], min=-1),
               n("relu6", "relu6", ["x"]), n("hardtanh", "hardtanh", ["x"], min_val=-0.5),
               # sqrt of a positive input: the check fails on NaN
               n("exp", "exp", ["x"]), n("sqrt", "sqrt", ["exp"]), n("erf", "erf", ["x"]),
               n("minimum", "minimum", ["x", "y"]), n("maximum", "maximum", ["x", "col"]),
               n("maximum_s", "maximum", ["x"], scalar=0.25),
               n("less", "less", ["x", "y"]), n("ge", "greater_equal", ["x"], scalar=0.0),
               n("eq_i", "equal", ["i"], scalar=1), n("ne", "not_equal", ["x", "y"]),
               n("both", "logical_and", ["less", "ge"]), n("either", "logical_or", ["less", "eq_i"]),
               n("neither", "logical_not", ["either"]),
               n("where", "where", ["less", "x", "y"]),
               n("fill", "constant", [], shape=["batch", 5, 1], value=-2.5),
               n("fill_b", "constant", [], shape=[4], value=1, dtype="bool"),
               n("iota", "iota", [], shape=["batch", 5], axis=1, start=2, step=3),
               n("iota_mid", "iota", [], shape=[2, 5, 3], axis=1, start=0.5, step=0.25,
                 dtype="float32"),
               n("roll", "roll", ["x"], shifts=[2, -3], dims=[1, 2]),
               n("roll_img", "roll", ["img"], shifts=[-2, -2], dims=[1, 2]),
               # Python's // and %; the clamped ints (-1 and up) divide by 0 and by -1 too
               n("clamp_i2", "clamp", ["i"], min=-1, max=2),
               n("fdiv", "floor_divide", ["x", "y"]), n("rem", "remainder", ["x", "col"]),
               n("fdiv_i", "floor_divide", ["i", "clamp_i2"]),
               n("rem_i", "remainder", ["i", "clamp_i2"]), n("rem_is", "remainder", ["i"], scalar=-3),
               n("x4", "mul", ["x"], scalar=4.0), n("floor", "floor", ["x4"]),
               n("round", "round", ["x4"]), n("trunc", "trunc", ["x4"]), n("expm1", "expm1", ["x"]),
               n("log1p", "log1p", ["exp"]), n("tan", "tan", ["x"]), n("atan", "atan", ["x4"])],
        outputs=["fdiv", "rem", "fdiv_i", "rem_i", "rem_is", "floor", "round", "trunc", "expm1",
                 "log1p", "tan", "atan",
                 "sqrt", "exp", "erf", "clamp", "clamp_i", "relu6", "hardtanh", "minimum", "maximum", "maximum_s",
                 "less", "ge", "eq_i", "ne", "both", "either", "neither", "where", "fill",
                 "fill_b", "iota", "iota_mid", "roll", "roll_img"]),
    # the epilogue activations beyond the unary ops (relu6, the importers' hardsigmoid, hardtanh
    # with its bounds, one side open too, the tanh GELU) on CUTLASS GEMMs and convs and on the own fallbacks
    # (odd K: gemm_simple; 3 channels: conv2d_direct); inputs scaled so every bound is reached
    "epilogue_activations": dict(
        inputs={"x": {"shape": ["batch", 6, 16]}, "x7": {"shape": ["batch", 6, 7]},
                "img": {"shape": ["batch", 9, 9, 8]}, "res": {"shape": ["batch", 9, 9, 16]},
                "img3": {"shape": ["batch", 9, 9, 3]}},
        graph=[n("x4", "mul", ["x"], scalar=4.0), n("img4", "mul", ["img"], scalar=4.0),
               n("lin_relu6", "linear", ["x4"], out_features=24, activation="relu6"),
               n("lin_hsig", "linear", ["x4"], out_features=24, activation="hardsigmoid"),
               n("lin_htanh", "linear", ["x4"], out_features=24, activation="hardtanh",
                 hardtanh_min=-0.5, hardtanh_max=2.0),
               n("mm_open", "matmul", ["x4", "x4"], transpose_b=True, activation="hardtanh",
                 hardtanh_min=float("-inf"), hardtanh_max=0.25),
               n("lin_k7", "linear", ["x7"], out_features=8, activation="hardsigmoid"),
               # the tanh GELU's device form (x sigmoid(2y)) over both tails
               n("lin_gelu_tanh", "linear", ["x4"], out_features=24, activation="gelu_tanh"),
               n("c3_relu6", "conv2d", ["img4"], out_channels=16, kernel=3, padding=1,
                 activation="relu6"),
               n("c1_hsig", "conv2d", ["img4", "res"], out_channels=16, kernel=1,
                 activation="hardsigmoid"),
               n("c_odd", "conv2d", ["img3"], out_channels=6, kernel=3, padding=1,
                 activation="hardtanh", hardtanh_min=-0.5, hardtanh_max=0.5),
               # leaky_relu with its slope on CUTLASS GEMMs and convs, the odd-K GEMM, the
               # direct conv, a depthwise conv, and on its own
               n("lin_leaky", "linear", ["x4"], out_features=24, activation="leaky_relu",
                 leaky_slope=0.2),
               n("lin_k7_leaky", "linear", ["x7"], out_features=8, activation="leaky_relu",
                 leaky_slope=0.1),
               n("c3_leaky", "conv2d", ["img4"], out_channels=16, kernel=3, padding=1,
                 activation="leaky_relu", leaky_slope=0.1),
               n("c_odd_leaky", "conv2d", ["img3"], out_channels=6, kernel=3, padding=1,
                 activation="leaky_relu", leaky_slope=0.3),
               n("dw_leaky", "conv2d", ["img4"], out_channels=8, kernel=3, groups=8, padding=1,
                 activation="leaky_relu", leaky_slope=0.05),
               n("leaky", "leaky_relu", ["x"], negative_slope=0.05)],
        outputs=["lin_relu6", "lin_hsig", "lin_htanh", "mm_open", "lin_k7", "lin_gelu_tanh",
                 "c3_relu6", "c1_hsig", "c_odd", "lin_leaky", "lin_k7_leaky", "c3_leaky",
                 "c_odd_leaky", "dw_leaky", "leaky"]),
    # depthwise convs (depthwise_conv2d.cu.j2): 3x3, 5x5 and 7x7 windows, strides 1 and 2,
    # dilation 2; channels in 16-byte vectors (16, 24, 32), in 4 (12) and in none (5);
    # bias, residual and activations; images of one tile and of several along H and W with
    # partial tiles ("f", "g", "h"); several channel slices per pixel, the last one partial
    # (136 and 132 channels: slices of 32, or of 16 in float32; 132 loads 4 elements at a time)
    "depthwise": dict(
        inputs={"a": {"shape": ["batch", 13, 13, 16]}, "b": {"shape": ["batch", 12, 12, 24]},
                "c": {"shape": ["batch", 12, 12, 32]}, "d": {"shape": ["batch", 9, 11, 12]},
                "e": {"shape": ["batch", 7, 9, 5]}, "ra": {"shape": ["batch", 13, 13, 16]},
                "rc": {"shape": ["batch", 12, 12, 32]}, "f": {"shape": ["batch", 8, 40, 24]},
                "g": {"shape": ["batch", 30, 33, 136]}, "rg": {"shape": ["batch", 30, 33, 136]},
                "h": {"shape": ["batch", 19, 21, 132]}},
        graph=[n("dw3", "conv2d", ["a"], out_channels=16, kernel=3, groups=16, padding=1,
                 activation="relu6"),
               n("dw3_s2", "conv2d", ["a"], out_channels=16, kernel=3, groups=16, stride=2,
                 padding=1, bias=False),
               n("dw3_res", "conv2d", ["a", "ra"], out_channels=16, kernel=3, groups=16,
                 padding=1, activation="hardsigmoid"),
               n("dw3_d2", "conv2d", ["a"], out_channels=16, kernel=3, groups=16, padding=2,
                 dilation=2, activation="silu"),
               n("dw5", "conv2d", ["b"], out_channels=24, kernel=5, groups=24, padding=2,
                 activation="silu"),
               n("dw5_s2", "conv2d", ["b"], out_channels=24, kernel=5, groups=24, stride=2,
                 padding=2, activation="hardswish"),
               n("dw7_res", "conv2d", ["c", "rc"], out_channels=32, kernel=7, groups=32,
                 padding=3, activation="gelu"),
               n("dw7_s2", "conv2d", ["c"], out_channels=32, kernel=7, groups=32, stride=2,
                 padding=3),
               n("dw3_c12", "conv2d", ["d"], out_channels=12, kernel=3, groups=12, padding=1,
                 activation="leaky_relu", leaky_slope=0.1),
               n("dw3_c5", "conv2d", ["e"], out_channels=5, kernel=[3, 5], groups=5,
                 padding=[1, 2], activation="hardtanh", hardtanh_min=-0.5, hardtanh_max=0.5),
               n("dw3_wide", "conv2d", ["f"], out_channels=24, kernel=3, groups=24, padding=1),
               n("dw5_wide_s2", "conv2d", ["f"], out_channels=24, kernel=5, groups=24,
                 stride=2, padding=2, activation="silu"),
               n("dw3_slices_res", "conv2d", ["g", "rg"], out_channels=136, kernel=3,
                 groups=136, padding=1, activation="relu"),
               n("dw5_slices_s2", "conv2d", ["g"], out_channels=136, kernel=5, groups=136,
                 stride=2, padding=2, bias=False),
               n("dw7_c132", "conv2d", ["h"], out_channels=132, kernel=7, groups=132, padding=3,
                 activation="hardswish")],
        outputs=["dw3", "dw3_s2", "dw3_res", "dw3_d2", "dw5", "dw5_s2", "dw7_res", "dw7_s2",
                 "dw3_c12", "dw3_c5", "dw3_wide", "dw5_wide_s2", "dw3_slices_res",
                 "dw5_slices_s2", "dw7_c132"]),
    # global average pools (global_avg_pool.cu.j2: 16-byte vectors over 64 and 16 channels,
    # single channels over 12; 49 to 4096 pixels, the largest image in ranges of pixels whose
    # partial sums a second kernel adds) and squeeze-excitation's channel scale
    # (channel_scale.cu.j2: per image, shared by every image, either operand first; 12
    # channels take single channels); pools of depthwise convs' outputs, which the conv's
    # kernel sums by tiles (backends/gpu/depthwise.pool_reader): one also scaled by the gate,
    # one over 12 channels, one with a residual, one in several channel slices with partial
    # tiles; no GEMM, so the host-emulation test runs it too
    "pools_and_scales": dict(
        inputs={"img": {"shape": ["batch", 14, 14, 64]}, "odd": {"shape": ["batch", 9, 9, 12]},
                "big": {"shape": ["batch", 40, 40, 16]}, "small": {"shape": ["batch", 7, 7, 64]},
                "huge": {"shape": ["batch", 64, 64, 32]},
                "gate": {"shape": ["batch", 1, 1, 64]}, "shared": {"shape": [1, 1, 1, 64]},
                "gate12": {"shape": ["batch", 1, 1, 12]}, "wide": {"shape": ["batch", 15, 17, 136]},
                "res12": {"shape": ["batch", 9, 9, 12]}},
        graph=[n("gap", "global_avg_pool", ["img"], keepdims=True),
               n("gap_odd", "global_avg_pool", ["odd"]), n("gap_big", "global_avg_pool", ["big"]),
               n("gap_small", "global_avg_pool", ["small"]),
               n("gap_huge", "global_avg_pool", ["huge"]),
               n("scaled", "mul", ["img", "gate"]), n("scaled_first", "mul", ["gate", "img"]),
               n("scaled_shared", "mul", ["img", "shared"]),
               n("scaled_odd", "mul", ["odd", "gate12"]),
               n("dw_img", "conv2d", ["img"], out_channels=64, kernel=3, groups=64, padding=1,
                 activation="silu"),
               n("gap_dw", "global_avg_pool", ["dw_img"], keepdims=True),
               n("dw_scaled", "mul", ["dw_img", "gap_dw"]),
               n("dw_odd_res", "conv2d", ["odd", "res12"], out_channels=12, kernel=3, groups=12,
                 padding=1, activation="relu"),
               n("gap_dw_odd", "global_avg_pool", ["dw_odd_res"]),
               n("dw_wide", "conv2d", ["wide"], out_channels=136, kernel=5, groups=136,
                 stride=2, padding=2, bias=False),
               n("gap_dw_wide", "global_avg_pool", ["dw_wide"])],
        outputs=["gap", "gap_odd", "gap_big", "gap_small", "gap_huge", "scaled", "scaled_first",
                 "scaled_shared", "scaled_odd", "dw_scaled", "gap_dw_odd", "gap_dw_wide"]),
    # squeeze-excitation blocks as the importers write them: MobileNetV3's (relu, then the
    # add 3 -> relu6 -> div 6 hardsigmoid the epilogue takes) and EfficientNet's (silu, sigmoid)
    "squeeze_excitation": dict(
        inputs={"x": {"shape": ["batch", 14, 14, 64]}, "y": {"shape": ["batch", 14, 14, 64]},
                "w": {"shape": ["batch", 14, 14, 64]}, "z": {"shape": ["batch", 7, 7, 96]}},
        graph=[n("pool", "global_avg_pool", ["x"], keepdims=True),
               n("fc1", "conv2d", ["pool"], out_channels=16, kernel=1),
               n("fc1_act", "relu", ["fc1"]),
               n("fc2", "conv2d", ["fc1_act"], out_channels=64, kernel=1),
               n("shifted", "add", ["fc2"], scalar=3.0), n("clipped", "relu6", ["shifted"]),
               n("hsig", "div", ["clipped"], scalar=6.0),
               n("mnv3", "mul", ["hsig", "x"]),
               n("e_fc1", "conv2d", ["pool"], out_channels=16, kernel=1, activation="silu"),
               n("e_fc2", "conv2d", ["e_fc1"], out_channels=64, kernel=1),
               n("e_gate", "sigmoid", ["e_fc2"]),
               n("effnet", "mul", ["x", "e_gate"]),
               # blocks whose projection alone reads the product: where the map has more pixels
               # than the projection outputs, the gate scales its weights per image instead
               # (gpu/gemm.py scaled_pointwise), into 24 outputs and into 64 with a residual; a
               # 7x7 map into 64 outputs keeps the mul
               # (each block its own map, as in a model: two pools of one map are one node
               # after merge_duplicates, and a shared pool is no gate chain)
               *se_block("a", "w", 16, 64, "hardsigmoid", 24),
               *se_block("b", "y", 16, 64, "sigmoid", 64, residual="y"),
               *se_block("c", "z", 24, 96, "sigmoid", 64)],
        outputs=["mnv3", "effnet", "a_proj", "b_proj", "c_proj"]),
    "import_families": IMPORT_FAMILIES,  # tests/backends/family_ops.py, also built for cpu
    "experts": EXPERTS,  # grouped_matmul: CUTLASS's grouped GEMM and our kernel (family_ops.py)
    # DenseNet's concat -> batch norm -> relu and lone batch norms -> relu6/silu, fused by the
    # optimizer (only the ends are outputs): concat_elementwise.cu.j2 in 16-byte vectors and
    # single channels, fused programs (tests/backends/family_ops.py, also built for cpu)
    "concat_norms": CONCAT_NORMS,
    # permutes that swap the innermost axes (transpose.cu.j2), tests/backends/family_ops.py
    "layout_swaps": LAYOUT_SWAPS,
    # chains of data movement fused into one strided_copy each: padded_copy.cu.j2 (pad bounds,
    # the pad value in the same pass) and the strided copy, tests/backends/family_ops.py
    "movement_chains": MOVEMENT_CHAINS,
    # resizes (gpu/resize2d.cu.j2): a segmentation head's 21 channels (one a thread), 64
    # channels in 16-byte vectors, bilinear with both coordinate rules, nearest, and bicubic
    # (16 taps) both ways
    "resizes": dict(
        inputs={"x": {"shape": ["batch", 7, 9, 21]}, "y": {"shape": ["batch", 5, 6, 64]}},
        graph=[n("up21", "resize2d", ["x"], size=[28, 36], mode="linear",
                 coordinates="pytorch_half_pixel"),
               n("up64", "resize2d", ["y"], size=[10, 12], mode="linear",
                 coordinates="align_corners"),
               n("near64", "resize2d", ["y"], size=[10, 12], mode="nearest"),
               n("down21", "resize2d", ["x"], size=[3, 4], mode="linear",
                 coordinates="pytorch_half_pixel"),
               n("cubic64", "resize2d", ["y"], size=[11, 4], mode="cubic",
                 coordinates="half_pixel"),
               n("cubic21", "resize2d", ["x"], size=[16, 8], mode="cubic",
                 coordinates="align_corners")],
        outputs=["up21", "up64", "near64", "down21", "cubic64", "cubic21"]),
    # a step over a symbolic size (audio of 320*frames + 80 samples read by strided convs): the
    # slices' offsets and sizes are polynomials of the dim, and every call with another batch
    # places the workspace anew at run time
    "symbolic_strides": dict(
        inputs={"x": {"shape": ["batch", "5*batch + 2", 8]}},
        graph=[n("tap_last", "slice", ["x"], axis=1, start=2, step=5),
               n("tap_first", "slice", ["x"], axis=1, start=0, end=-2, step=5),
               n("taps", "add", ["tap_first", "tap_last"]),
               n("every_other", "slice", ["x"], axis=1, start=1, end=-1, step=5),
               n("scaled", "mul", ["taps", "every_other"])],
        outputs=["tap_last", "tap_first", "taps", "scaled"]),
    "lookup": dict(
        inputs={"ids": {"shape": ["batch", 6], "dtype": "int64"},
                "ids32": {"shape": ["batch", 3], "dtype": "int32"},
                "data": {"shape": ["batch", 5, 4]}, "at": {"shape": [3], "dtype": "int32"}},
        graph=[n("emb", "embedding", ["ids"], num_embeddings=5, embedding_dim=8),
               n("emb32", "embedding", ["ids32"], num_embeddings=5, embedding_dim=8),
               n("gather", "gather", ["data", "at"], axis=1)],
        outputs=["emb", "emb32", "gather"]),
}

# the same grouped convs and masked attention in bfloat16 (a group's `dtype`: the model's,
# float16 by default)
# every distinct depthwise conv of EfficientNet-B0 (silu), MobileNetV3-Large (relu, hardswish)
# and ConvNeXt (7x7, no activation): (input size, channels, kernel, stride, activation); the
# group of them runs their planned tiles (backends/gpu/depthwise.py), which the small shapes
# above do not reach, on the GPU (too large for the host emulation)
IMAGENET_DEPTHWISE = [
    (112, 32, 3, 1, "silu"), (112, 96, 3, 2, "silu"), (56, 144, 3, 1, "silu"),
    (56, 144, 5, 2, "silu"), (28, 240, 5, 1, "silu"), (28, 240, 3, 2, "silu"),
    (14, 480, 3, 1, "silu"), (14, 480, 5, 1, "silu"), (14, 672, 5, 1, "silu"),
    (14, 672, 5, 2, "silu"), (7, 1152, 5, 1, "silu"), (7, 1152, 3, 1, "silu"),
    (112, 16, 3, 1, "relu"), (112, 64, 3, 2, "relu"), (56, 72, 3, 1, "relu"),
    (56, 72, 5, 2, "relu"), (28, 120, 5, 1, "relu"), (14, 200, 3, 1, "hardswish"),
    (14, 184, 3, 1, "hardswish"), (7, 960, 5, 1, "hardswish"), (56, 96, 7, 1, "none"),
    (28, 192, 7, 1, "none"), (14, 384, 7, 1, "none"), (7, 768, 7, 1, "none")]
GROUPS["depthwise_imagenet"] = dict(
    inputs={f"x{i}": {"shape": ["batch", size, size, c]}
            for i, (size, c, _, _, _) in enumerate(IMAGENET_DEPTHWISE)},
    graph=[n(f"dw{i}_{size}x{c}_k{k}s{s}", "conv2d", [f"x{i}"], out_channels=c, kernel=k,
             groups=c, stride=s, padding=k // 2, activation=act)
           for i, (size, c, k, s, act) in enumerate(IMAGENET_DEPTHWISE)],
    outputs=[f"dw{i}_{size}x{c}_k{k}s{s}"
             for i, (size, c, k, s, _) in enumerate(IMAGENET_DEPTHWISE)])
GROUPS["grouped_conv_bfloat16"] = dict(GROUPS["grouped_conv"], dtype="bfloat16")
GROUPS["stem_conv_float32"] = dict(GROUPS["stem_conv"], dtype="float32")
GROUPS["direct_stems_float32"] = dict(GROUPS["direct_stems"], dtype="float32")
GROUPS["attention_masks_bfloat16"] = dict(GROUPS["attention_masks"], dtype="bfloat16")
GROUPS["window_attention_bfloat16"] = dict(GROUPS["window_attention"], dtype="bfloat16")


# the bandwidth-bound families (depthwise convs, pools, squeeze-excitation) and the epilogue
# activations: their groups above run in float16 on both targets; test_gpu_families.py runs
# their own kernels in these other dtypes on h200 (the epilogue functors compute in float32
# whatever the storage: the bfloat16 small specs cover CUTLASS's bfloat16 epilogues)
FAMILY_GROUPS = ["depthwise", "depthwise_imagenet", "pools_and_scales", "squeeze_excitation",
                 "epilogue_activations"]
FAMILY_VARIANTS = [("depthwise", "bfloat16"), ("depthwise", "float32"),
                   ("pools_and_scales", "bfloat16")]

SMALL = ["mlp", "tiny_cnn", "tiny_bert", "tiny_vit"]
FP16_SMALL = ["tiny_cnn", "tiny_vit"]  # tiny_bert casts its mask to float32 explicitly
SEEDS = {"resnet50": {"batch": 1}, "bert_base": {"batch": 1, "seq": 128}, "vit_b16": {"batch": 1}}
# bfloat16 variants (bf16_spec: tiny_bert's mask cast follows the model dtype): the small specs
# and one seed model, ViT-B/16, whose kernels (conv, sm90 GEMMs, Hopper FMHA + example 41, layer
# norms, copies) cover BERT-base's too
BF16_SMALL = ["mlp", "tiny_cnn", "tiny_bert", "tiny_vit"]
BF16_SEEDS = {"vit_b16": {"batch": 1}}


def op_spec(group: str, dtype: str = "float16") -> str:
    """build/specs/cuda_ops_<group>.yaml (rewritten only when its text changes); another dtype
    than float16 is cuda_ops_<group>_<dtype>.yaml."""
    from ait_build.codegen.emit import write_if_changed
    g = GROUPS[group]
    dtype = g.get("dtype", dtype)  # a group of its own dtype (grouped_conv_bfloat16) keeps its name
    name = f"cuda_ops_{group}" + ("" if dtype == "float16" or "dtype" in g else f"_{dtype}")
    doc = {"apiVersion": "ait-build/v1", "kind": "Model", "name": name,
           "dtype": dtype, "dims": B, "inputs": g["inputs"],
           "weights": {"random": {"seed": 0}}, "graph": g["graph"], "outputs": g["outputs"]}
    path = os.path.join(ROOT, "build", "specs", f"{name}.yaml")
    write_if_changed(path, yaml.safe_dump(doc, sort_keys=False).encode())
    return path


def family_specs() -> list:
    """The specs of the bandwidth-bound families' tests (test_gpu_families.py and their float16
    groups in test_gpu_numerics), for a session that runs only those."""
    return [op_spec(g) for g in FAMILY_GROUPS] + [op_spec(g, d) for g, d in FAMILY_VARIANTS]


def all_specs() -> list:
    return ([op_spec(g) for g in sorted(GROUPS)] + [spec_path(s) for s in SMALL]
            + [fp16_spec(s) for s in FP16_SMALL] + [spec_path(s) for s in sorted(SEEDS)]
            + [bf16_spec(s) for s in BF16_SMALL + sorted(BF16_SEEDS)]
            + [op_spec(g, d) for g, d in FAMILY_VARIANTS])


if __name__ == "__main__":  # `families`: family_specs() alone
    import sys
    print(",".join(family_specs() if sys.argv[1:] == ["families"] else all_specs()))
