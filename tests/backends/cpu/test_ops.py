"""Every op through the cpu backend: small models with many nodes (each node's result is a model
output), built as written (no optimizer: each op gets its own kernel), compiled once per group,
run at two batch sizes and compared with the reference executor."""

from __future__ import annotations

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

from .helpers import tolerance, write_spec
from ..family_ops import EXPERTS, IMPORT_FAMILIES, n

B = {"batch": {"min": 1, "max": 8, "opt": 3}}


GROUPS = {
    "elementwise": dict(
        inputs={"x": {"shape": ["batch", 5, 8]}, "y": {"shape": ["batch", 5, 8]},
                "row": {"shape": [8]}, "col": {"shape": ["batch", 5, 1]},
                "i": {"shape": ["batch", 5, 8], "dtype": "int32"}},
        graph=[n("relu", "relu", ["x"]), n("silu", "silu", ["x"]), n("sigmoid", "sigmoid", ["x"]),
               n("tanh", "tanh", ["x"]), n("hardswish", "hardswish", ["x"]),
               n("gelu", "gelu", ["x"]), n("gelu_tanh", "gelu", ["x"], approximate="tanh"),
               n("identity", "identity", ["x"]),
               n("add", "add", ["x", "y"]), n("sub_row", "sub", ["x", "row"]),
               n("mul_col", "mul", ["x", "col"]), n("div", "div", ["x", "y"]),
               n("add_scalar", "add", ["x"], scalar=2.5), n("div_scalar", "div", ["x"], scalar=3),
               n("to_f16", "cast", ["x"], dtype="float16"),
               n("to_bf16", "cast", ["x"], dtype="bfloat16"),
               n("to_i32", "cast", ["x"], dtype="int32"), n("to_bool", "cast", ["x"], dtype="bool"),
               n("i_to_f", "cast", ["i"], dtype="float32"), n("i_add", "add", ["i", "i"]),
               n("bn", "batch_norm", ["x"], eps=1e-3),
               n("chain_view", "reshape", ["x"], shape=["batch", 40]),
               n("chain_relu", "relu", ["chain_view"])],
        outputs=["relu", "silu", "sigmoid", "tanh", "hardswish", "gelu", "gelu_tanh", "identity",
                 "add", "sub_row", "mul_col", "div", "add_scalar", "div_scalar", "to_f16",
                 "to_bf16", "to_i32", "to_bool", "i_to_f", "i_add", "bn", "chain_relu"]),
    "shape": dict(
        inputs={"x": {"shape": ["batch", 4, 6]}, "x1": {"shape": ["batch", 1, 6]}},
        graph=[n("reshape", "reshape", ["x"], shape=["batch", 24]),
               n("flatten", "flatten", ["x"]), n("permute", "permute", ["x"], dims=[2, 0, 1]),
               n("transpose", "transpose", ["x"], dim0=1, dim1=2),
               n("expand", "expand", ["x1"], shape=["batch", 4, 6]),
               n("concat", "concat", ["x", "x1", "x"], axis=1),
               {"name": "split", "op": "split", "inputs": ["x"], "axis": 2, "sizes": [1, 2, 3],
                "outputs": ["split_a", "split_b", "split_c"]},
               n("slice", "slice", ["x"], axis=2, start=1, end=5, step=2),
               n("slice_dim", "slice", ["x"], axis=0, start=0, end="batch"),
               n("slice_neg", "slice", ["x"], axis=2, start=-4, end=-1),  # Python's rules
               n("pad", "pad", ["x"], pads=[0, 0, 1, 2, 3, 0], value=-1.5),
               n("param", "parameter", [], shape=[4, 6], weights={"value": "table"}),
               n("plus_param", "add", ["x", "param"])],
        outputs=["reshape", "flatten", "permute", "transpose", "expand", "concat", "split_a",
                 "split_b", "split_c", "slice", "slice_dim", "slice_neg", "pad", "param",
                 "plus_param"]),
    "gemm": dict(
        inputs={"x": {"shape": ["batch", 6, 16]}, "res": {"shape": ["batch", 6, 12]},
                "res_row": {"shape": [12]}, "res_odd": {"shape": ["batch", 1, 12]},
                "b": {"shape": ["batch", 16, 5]}, "bt": {"shape": ["batch", 5, 16]},
                "a4": {"shape": ["batch", 2, 6, 16]}, "b3": {"shape": [2, 16, 5]},
                "a2": {"shape": [6, 16]}, "w": {"shape": [16, 5]}},
        graph=[n("linear", "linear", ["x"], out_features=12),
               n("linear_relu", "linear", ["x"], out_features=12, bias=False, activation="relu"),
               n("linear_res", "linear", ["x", "res"], out_features=12, activation="gelu"),
               n("linear_row", "linear", ["x", "res_row"], out_features=12),
               n("linear_odd", "linear", ["x", "res_odd"], out_features=12, activation="tanh"),
               n("matmul", "matmul", ["x", "b"]),
               n("matmul_t", "matmul", ["x", "bt"], transpose_b=True, alpha=0.5),
               n("matmul_bcast", "matmul", ["a4", "b3"], activation="silu"),
               n("matmul_a2", "matmul", ["a2", "b"]),
               n("matmul_shared", "matmul", ["x", "w"]),
               n("bmm", "bmm", ["x", "b", "matmul"], activation="sigmoid")],
        outputs=["linear", "linear_relu", "linear_res", "linear_row", "linear_odd", "matmul",
                 "matmul_t", "matmul_bcast", "matmul_a2", "matmul_shared", "bmm"]),
    "conv": dict(
        inputs={"img": {"shape": ["batch", 9, 9, 4]}, "res": {"shape": ["batch", 9, 9, 8]},
                "res4": {"shape": ["batch", 5, 5, 4]}, "img36": {"shape": ["batch", 7, 7, 36]}},
        graph=[n("c3", "conv2d", ["img"], out_channels=8, kernel=3, padding=1, activation="relu"),
               n("c3s2d2", "conv2d", ["img"], out_channels=8, kernel=3, stride=2, dilation=2,
                 padding=2, bias=False),
               n("c1", "conv2d", ["img", "res"], out_channels=8, kernel=1, activation="hardswish"),
               n("c1s2", "conv2d", ["img"], out_channels=8, kernel=1, stride=2),
               n("c_rect", "conv2d", ["img"], out_channels=8, kernel=[5, 3], padding=[2, 1]),
               n("grouped", "conv2d", ["img"], out_channels=6, kernel=3, groups=2, padding=1),
               n("depthwise", "conv2d", ["img"], out_channels=4, kernel=3, groups=4, padding=1,
                 activation="silu"),
               n("dw_s2", "conv2d", ["img", "res4"], out_channels=4, kernel=3, groups=4, stride=2,
                 padding=1, bias=False),
               n("maxpool", "max_pool2d", ["img"], kernel=3, stride=2, padding=1),
               n("avgpool", "avg_pool2d", ["img"], kernel=3, stride=2, padding=1),
               n("avgpool_x", "avg_pool2d", ["img"], kernel=2, stride=2, padding=1,
                 count_include_pad=False),
               n("maxpool_nostride", "max_pool2d", ["img"], kernel=2),  # stride = kernel
               # two whole blocks of 16 channels and a tail of 4 (pool2d.cpp.j2)
               n("maxpool36", "max_pool2d", ["img36"], kernel=3, stride=2, padding=1),
               n("avgpool36", "avg_pool2d", ["img36"], kernel=3, stride=2, padding=1,
                 count_include_pad=False),
               n("gap", "global_avg_pool", ["img"]),
               n("gap_keep", "global_avg_pool", ["img"], keepdims=True)],
        outputs=["c3", "c3s2d2", "c1", "c1s2", "c_rect", "grouped", "depthwise", "dw_s2",
                 "maxpool", "avgpool", "avgpool_x", "maxpool_nostride", "maxpool36", "avgpool36",
                 "gap", "gap_keep"]),
    "norm_attention": dict(
        inputs={"x": {"shape": ["batch", 7, 16]}, "r": {"shape": ["batch", 7, 16]},
                "kv": {"shape": ["batch", 5, 16]}, "qkv": {"shape": ["batch", 7, 48]},
                "mask": {"shape": ["batch", 1, 1, 7]}, "full": {"shape": ["batch", 2, 7, 5]},
                "long": {"shape": ["batch", 3, 37]}, "cols": {"shape": ["batch", 4, 600]},
                "windows": {"shape": [2, 2, 7, 7]}},
        graph=[n("ln", "layer_norm", ["x"]), n("ln_res", "layer_norm", ["x", "r"], eps=1e-6),
               n("ln_plain", "layer_norm", ["x"], affine=False),
               n("softmax", "softmax", ["x"]), n("softmax_mid", "softmax", ["x"], axis=1),
               # rows of two 16-float vectors and a tail, scaled so that exp overflows unless
               # the row's maximum is found exactly and subtracted first
               n("long300", "mul", ["long"], scalar=300.0),
               n("softmax_long", "softmax", ["long300"]),
               n("softmax_long_mid", "softmax", ["long300"], axis=1),
               # over the middle axis with 600 columns: three tiles of columns (softmax.cpp.j2),
               # and at batch 5 enough work that threads split the columns
               n("cols300", "mul", ["cols"], scalar=300.0),
               n("softmax_cols_mid", "softmax", ["cols300"], axis=1),
               n("mha", "multi_head_attention", ["x", "r", "x", "mask"], num_heads=2, head_dim=8),
               n("mha_cross", "multi_head_attention", ["x", "kv", "kv", "full"], num_heads=2,
                 head_dim=8, scale=0.3),
               n("mha_packed", "multi_head_attention", ["qkv"], num_heads=2, head_dim=8,
                 packed=True, causal=True),
               # batch b adds windows[b % 2] (Swin's shifted-window masks)
               n("mha_windows", "multi_head_attention", ["x", "x", "x", "windows"], num_heads=2,
                 head_dim=8, bias_period=2)],
        outputs=["ln", "ln_res", "ln_plain", "softmax", "softmax_mid", "softmax_long",
                 "softmax_long_mid", "softmax_cols_mid", "mha", "mha_cross", "mha_packed",
                 "mha_windows"]),
    # the ops real model zoos need beyond the seed models: clamps, minimum/maximum, masks built
    # in the model (iota, comparisons, logic, where), fills, rolls, GPT-2's [in, out] linear
    "masks_and_clamps": dict(
        inputs={"x": {"shape": ["batch", 5, 8]}, "y": {"shape": ["batch", 5, 8]},
                "col": {"shape": ["batch", 5, 1]},
                "i": {"shape": ["batch", 5, 8], "dtype": "int32"},
                "img": {"shape": ["batch", 6, 4, 3]}},
        graph=[n("clamp", "clamp", ["x"], min=-0.5, max=0.7), n("clamp_lo", "clamp", ["x"], min=0),
               n("clamp_i", "clamp", ["i"], min=-1, max=2),
               n("x4", "mul", ["x"], scalar=4.0), n("relu6", "relu6", ["x4"]),
               n("hardtanh", "hardtanh", ["x"], min_val=-0.5, max_val=2.0),
               n("sqrt", "sqrt", ["x4"]), n("exp", "exp", ["x"]), n("erf", "erf", ["x"]),
               n("minimum", "minimum", ["x", "y"]), n("maximum", "maximum", ["x", "col"]),
               n("maximum_s", "maximum", ["x"], scalar=0.25),
               n("minimum_i", "minimum", ["i"], scalar=1),
               n("less", "less", ["x", "y"]), n("ge", "greater_equal", ["x"], scalar=0.0),
               n("eq_i", "equal", ["i"], scalar=1), n("ne", "not_equal", ["x", "y"]),
               n("le", "less_equal", ["x", "col"]), n("gt", "greater", ["i"], scalar=0),
               n("both", "logical_and", ["less", "ge"]), n("either", "logical_or", ["less", "eq_i"]),
               n("neither", "logical_not", ["either"]),
               n("where", "where", ["less", "x", "y"]), n("where_b", "where", ["le", "col", "x"]),
               n("fill", "constant", [], shape=["batch", 5, 1], value=-2.5),
               n("fill_i", "constant", [], shape=[2, 3], value=7, dtype="int64"),
               n("fill_b", "constant", [], shape=[4], value=1, dtype="bool"),
               n("iota", "iota", [], shape=["batch", 5], axis=1, start=2, step=3),
               n("iota_mid", "iota", [], shape=[2, 5, 3], axis=1, start=0.5, step=0.25,
                 dtype="float32"),
               n("iota_i32", "iota", [], shape=[6], dtype="int32", start=-2),
               n("rows", "iota", [], shape=[5, 1], axis=0), n("cols", "iota", [], shape=[1, 5]),
               n("causal", "less_equal", ["cols", "rows"]),
               n("neg_inf", "constant", [], shape=[1], value=float("-inf")),
               n("zero", "constant", [], shape=[1], value=0.0),
               n("causal_bias", "where", ["causal", "zero", "neg_inf"]),
               n("roll", "roll", ["x"], shifts=[2, -3], dims=[1, 2]),
               n("roll_one", "roll", ["x"], shifts=[1], dims=[-1]),
               n("roll_img", "roll", ["img"], shifts=[-2, -2], dims=[1, 2]),
               n("linear_in_out", "linear", ["x"], out_features=6, weight_layout="in_out"),
               # Python's // and %: clamp_i (-1, 0, 1, 2) divides by 0 and by -1 too
               n("fdiv", "floor_divide", ["x", "y"]), n("rem", "remainder", ["x", "col"]),
               n("fdiv_i", "floor_divide", ["i", "clamp_i"]), n("rem_i", "remainder", ["i", "clamp_i"]),
               n("rem_is", "remainder", ["i"], scalar=-3), n("fdiv_s", "floor_divide", ["x"], scalar=0.3),
               # rounding (x4 reaches halves only by chance: round's halves to even are in
               # tests/ops) and the activations' accurate pieces
               n("floor", "floor", ["x4"]), n("round", "round", ["x4"]), n("trunc", "trunc", ["x4"]),
               n("expm1", "expm1", ["x"]), n("log1p", "log1p", ["exp"]), n("tan", "tan", ["x"]),
               n("atan", "atan", ["x4"])],
        outputs=["fdiv", "rem", "fdiv_i", "rem_i", "rem_is", "fdiv_s", "floor", "round", "trunc",
                 "expm1", "log1p", "tan", "atan",
                 "sqrt", "exp", "erf", "clamp", "clamp_lo", "clamp_i", "relu6", "hardtanh", "minimum", "maximum",
                 "maximum_s", "minimum_i", "less", "ge", "eq_i", "ne", "le", "gt", "both",
                 "either", "neither", "where", "where_b", "fill", "fill_i", "fill_b", "iota",
                 "iota_mid", "iota_i32", "causal_bias", "roll", "roll_one", "roll_img",
                 "linear_in_out"]),
    "import_families": IMPORT_FAMILIES,  # ../family_ops.py, shared with the GPU tests
    "experts": EXPERTS,  # grouped_matmul (../family_ops.py), shared with the GPU tests
    # the epilogue activations beyond the unary ops: relu6, the importers' hardsigmoid and
    # hardtanh with its bounds (one side open too), on a GEMM, an im2col conv, a pointwise conv
    # with a residual and a depthwise conv; inputs scaled so that every bound is reached
    "epilogue_activations": dict(
        inputs={"x": {"shape": ["batch", 5, 16]}, "img": {"shape": ["batch", 6, 6, 8]},
                "res": {"shape": ["batch", 6, 6, 8]}},
        graph=[n("x4", "mul", ["x"], scalar=4.0), n("img4", "mul", ["img"], scalar=4.0),
               n("lin_relu6", "linear", ["x4"], out_features=12, activation="relu6"),
               n("lin_hsig", "linear", ["x4"], out_features=12, activation="hardsigmoid"),
               n("lin_htanh", "linear", ["x4"], out_features=12, activation="hardtanh",
                 hardtanh_min=-0.5, hardtanh_max=2.0),
               n("mm_open", "matmul", ["x4", "x4"], transpose_b=True, activation="hardtanh",
                 hardtanh_min=float("-inf"), hardtanh_max=0.25),
               n("c3_relu6", "conv2d", ["img4"], out_channels=8, kernel=3, padding=1,
                 activation="relu6"),
               n("c1_hsig", "conv2d", ["img4", "res"], out_channels=8, kernel=1,
                 activation="hardsigmoid"),
               n("dw_htanh", "conv2d", ["img4"], out_channels=8, kernel=3, groups=8, padding=1,
                 activation="hardtanh", hardtanh_min=-1.5, hardtanh_max=1.0),
               # leaky_relu with its slope: an epilogue, and the op on its own
               n("lin_leaky", "linear", ["x4"], out_features=12, activation="leaky_relu",
                 leaky_slope=0.2),
               n("c3_leaky", "conv2d", ["img4"], out_channels=8, kernel=3, padding=1,
                 activation="leaky_relu", leaky_slope=0.1),
               n("dw_leaky", "conv2d", ["img4", "res"], out_channels=8, kernel=3, groups=8,
                 padding=1, activation="leaky_relu", leaky_slope=0.3),
               n("leaky", "leaky_relu", ["x"], negative_slope=0.05)],
        outputs=["lin_relu6", "lin_hsig", "lin_htanh", "mm_open", "c3_relu6", "c1_hsig",
                 "dw_htanh", "lin_leaky", "c3_leaky", "dw_leaky", "leaky"]),
    "lookup": dict(
        inputs={"ids": {"shape": ["batch", 6], "dtype": "int64"},
                "ids32": {"shape": ["batch", 3], "dtype": "int32"},
                "data": {"shape": ["batch", 5, 4]}, "at": {"shape": [3], "dtype": "int32"}},
        graph=[n("emb", "embedding", ["ids"], num_embeddings=5, embedding_dim=8),
               n("emb32", "embedding", ["ids32"], num_embeddings=5, embedding_dim=8),
               n("gather", "gather", ["data", "at"], axis=1)],
        outputs=["emb", "emb32", "gather"]),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory, build_spec):
    cache = {}

    def get(group: str):
        if group not in cache:
            spec = write_spec(tmp_path_factory.mktemp(group), f"ops_{group}",
                              dims=B, **GROUPS[group])
            cache[group] = (build_spec(spec, optimize=False, name=group)[0], load_model(spec))
        return cache[group]

    return get


def inputs_for(graph, batch: int, seed: int) -> dict:
    inputs = random_inputs(graph, {"batch": batch}, seed=seed)
    if "at" in inputs:  # gather may index from the end: negative indices too
        inputs["at"] = np.array([-1, 3, -5], np.int32)
    return inputs


@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("batch", [1, 5])
def test_op_matches_reference(models, group, batch):
    model, graph = models(group)
    inputs = inputs_for(graph, batch, seed=batch)
    ref = run_reference(graph, inputs)
    got = model.run(inputs)
    for name, expected in ref.items():
        dtype = graph.tensors[name].dtype
        actual = got[name].astype(np.float32) if dtype != "bool" else got[name]
        np.testing.assert_allclose(actual, expected, **tolerance(expected), err_msg=name)



@pytest.mark.parametrize("group", ["gemm", "conv", "norm_attention"])
@pytest.mark.parametrize("blas", ["mkl", "openblas"])
def test_pinned_blas_targets_match_reference(tmp_path, object_cache, blas, group):
    """The targets that pin their BLAS, cpu_mkl and cpu_openblas (GEMMs, im2col convs and
    attention through it), against the reference: the stock cpu target takes MKL where it is
    installed, so the tests above may never run OpenBLAS. cpu_mkl where mkl-devel is installed."""
    from ait_build.backends.cpu.toolchain import find_mkl
    from ait_build.errors import AitError
    from ait_build.pipeline import emit
    from ait_build.pipeline import find_target
    from ait_build.backends import toolchain_for

    from .helpers import CModel, build_library
    if blas == "mkl":
        try:
            find_mkl()
        except AitError as exc:
            pytest.skip(str(exc))
    target = find_target(f"cpu_{blas}")
    spec = write_spec(tmp_path, f"{blas}_{group}", dims=B, **GROUPS[group])
    emission = emit(spec, target, str(tmp_path / "out"), optimize=False)
    lib = build_library(toolchain_for(target), str(tmp_path / "out"), emission, object_cache)
    model, graph = CModel(str(tmp_path / "out"), emission, lib), load_model(spec)
    try:
        for batch in (1, 5):
            inputs = inputs_for(graph, batch, seed=batch)
            got = model.run(inputs)
            for name, expected in run_reference(graph, inputs).items():
                np.testing.assert_allclose(got[name].astype(np.float32), expected,
                                           **tolerance(expected), err_msg=name)
    finally:
        model.close()

def test_every_op_has_a_cpu_kernel_and_a_test_here():
    from ait_build.backends.cpu import LOWER
    from ait_build.ops.registry import all_ops
    ops = set(all_ops())
    assert ops <= set(LOWER), sorted(ops - set(LOWER))
    tested = {e["op"] for g in GROUPS.values() for e in g["graph"]}
    # made by the optimizer: test_models runs fused_elementwise in the tiny transformers,
    # test_concat_norm concat_elementwise, test_movement_chains strided_copy
    assert ops - tested == {"fused_elementwise", "concat_elementwise", "strided_copy"}, \
        sorted(ops - tested)


def test_int64_scalar_is_exact_past_float_precision(build_spec, tmp_path):
    """An integer `scalar` stays an integer: 2^62 + 1 added to an int64 tensor is exact in the
    reference and in the library (as a float it would round to 2^62)."""
    big = 2**62 + 1
    spec = write_spec(tmp_path, "bigint", {"i": {"shape": [3], "dtype": "int64"}},
                      [n("plus", "add", ["i"], scalar=big)], ["plus"])
    model, _, _ = build_spec(spec, optimize=False, name="bigint")
    inputs = {"i": np.array([0, 1, -2], np.int64)}
    want = inputs["i"] + np.int64(big)
    np.testing.assert_array_equal(run_reference(load_model(spec), inputs)["plus"], want)
    np.testing.assert_array_equal(model.run(inputs)["plus"], want)
