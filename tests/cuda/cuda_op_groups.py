"""The specs the GPU tests build: every op the cuda backend lowers, in float16, in six small
models (each node's result is an output), with shapes that reach each kernel variant (aligned
CUTLASS GEMMs and convs, the unaligned fallbacks, direct grouped/depthwise convs); plus the
small zoo specs (float32 as written, float16 and bfloat16) and the seed models (as written, in
float16, and one in bfloat16). `all_specs()` lists them so the GPU machine can build everything
in one parallel SCons run:

    python -m SCons -j16 target=h200,a100 spec=$(python tests/cuda/cuda_op_groups.py)
"""

from __future__ import annotations

import os
import sys

import yaml

from cuda_helpers import ROOT, bf16_spec, fp16_spec, spec_path

sys.path.insert(0, os.path.join(ROOT, "tests"))  # the op group the cpu tests build too
from codegen.family_ops import IMPORT_FAMILIES  # noqa: E402

B = {"batch": {"min": 1, "max": 8, "opt": 3}}


def n(name, op, inputs, **attrs):
    return {"name": name, "op": op, "inputs": inputs, **attrs}


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
        inputs={"x": {"shape": ["batch", 4, 6]}, "x1": {"shape": ["batch", 1, 6]}},
        graph=[n("reshape", "reshape", ["x"], shape=["batch", 24]),
               n("permute", "permute", ["x"], dims=[2, 0, 1]),
               n("transpose", "transpose", ["x"], dim0=1, dim1=2),
               n("expand", "expand", ["x1"], shape=["batch", 4, 6]),
               n("concat", "concat", ["x", "x1", "x"], axis=1),
               {"name": "split", "op": "split", "inputs": ["x"], "axis": 2, "sizes": [1, 2, 3],
                "outputs": ["split_a", "split_b", "split_c"]},
               n("slice", "slice", ["x"], axis=2, start=1, end=5, step=2),
               n("pad", "pad", ["x"], pads=[0, 0, 1, 2, 3, 0], value=-1.5),
               n("pad_last", "pad", ["x"], pads=[0, 0, 0, 0, 1, 3], value=0.5),  # one pass
               n("param", "parameter", [], shape=[4, 6], weights={"value": "table"}),
               n("plus_param", "add", ["x", "param"])],
        outputs=["reshape", "permute", "transpose", "expand", "concat", "split_a", "split_b",
                 "split_c", "slice", "pad", "pad_last", "param", "plus_param"]),
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
                "img3": {"shape": ["batch", 9, 9, 3]}, "res8": {"shape": ["batch", 5, 5, 8]}},
        graph=[n("c3", "conv2d", ["img"], out_channels=16, kernel=3, padding=1, activation="relu"),
               n("c3s2d2", "conv2d", ["img"], out_channels=16, kernel=3, stride=2, dilation=2,
                 padding=2, bias=False),
               n("c1", "conv2d", ["img", "res"], out_channels=16, kernel=1, activation="hardswish"),
               n("c_rect", "conv2d", ["img"], out_channels=8, kernel=[5, 3], padding=[2, 1]),
               n("c_odd", "conv2d", ["img3"], out_channels=6, kernel=3, padding=1),
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
        outputs=["c3", "c3s2d2", "c1", "c_rect", "c_odd", "c_patch", "grouped", "depthwise", "dw_s2",
                 "maxpool", "avgpool", "avgpool_x", "gap"]),
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
                 head_dim=64)],
        outputs=["ln", "ln_res", "ln_plain", "ln768", "ln100", "softmax", "softmax_mid", "mha",
                 "mha_cross", "mha_packed", "mha_plain", "mha_odd"]),
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
               n("roll_img", "roll", ["img"], shifts=[-2, -2], dims=[1, 2])],
        outputs=["sqrt", "exp", "erf", "clamp", "clamp_i", "relu6", "hardtanh", "minimum", "maximum", "maximum_s",
                 "less", "ge", "eq_i", "ne", "both", "either", "neither", "where", "fill",
                 "fill_b", "iota", "iota_mid", "roll", "roll_img"]),
    "import_families": IMPORT_FAMILIES,  # tests/codegen/family_ops.py, also built for cpu
    "lookup": dict(
        inputs={"ids": {"shape": ["batch", 6], "dtype": "int64"},
                "ids32": {"shape": ["batch", 3], "dtype": "int32"},
                "data": {"shape": ["batch", 5, 4]}, "at": {"shape": [3], "dtype": "int32"}},
        graph=[n("emb", "embedding", ["ids"], num_embeddings=5, embedding_dim=8),
               n("emb32", "embedding", ["ids32"], num_embeddings=5, embedding_dim=8),
               n("gather", "gather", ["data", "at"], axis=1)],
        outputs=["emb", "emb32", "gather"]),
}


SMALL = ["mlp", "tiny_cnn", "tiny_bert", "tiny_vit"]
FP16_SMALL = ["tiny_cnn", "tiny_vit"]  # tiny_bert casts its mask to float32 explicitly
SEEDS = {"resnet50": {"batch": 1}, "bert_base": {"batch": 1, "seq": 128}, "vit_b16": {"batch": 1}}
# bfloat16 variants (bf16_spec: tiny_bert's mask cast follows the model dtype): the small specs
# and one seed model, ViT-B/16, whose kernels (conv, sm90 GEMMs, Hopper FMHA + example 41, layer
# norms, copies) cover BERT-base's too
BF16_SMALL = ["mlp", "tiny_cnn", "tiny_bert", "tiny_vit"]
BF16_SEEDS = {"vit_b16": {"batch": 1}}


def op_spec(group: str) -> str:
    """build/specs/cuda_ops_<group>.yaml (rewritten only when its text changes)."""
    from ait_build.codegen.emit import write_if_changed
    g = GROUPS[group]
    doc = {"apiVersion": "ait-build/v1", "kind": "Model", "name": f"cuda_ops_{group}",
           "dtype": "float16", "dims": B, "inputs": g["inputs"],
           "weights": {"random": {"seed": 0}}, "graph": g["graph"], "outputs": g["outputs"]}
    path = os.path.join(ROOT, "build", "specs", f"cuda_ops_{group}.yaml")
    write_if_changed(path, yaml.safe_dump(doc, sort_keys=False).encode())
    return path


def all_specs() -> list:
    return ([op_spec(g) for g in sorted(GROUPS)] + [spec_path(s) for s in SMALL]
            + [fp16_spec(s) for s in FP16_SMALL] + [spec_path(s) for s in sorted(SEEDS)]
            + [bf16_spec(s) for s in BF16_SMALL + sorted(BF16_SEEDS)])


if __name__ == "__main__":
    print(",".join(all_specs()))
