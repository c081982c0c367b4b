"""The cpu backend's kernels on channel vectors: depthwise convs (templates/cpu/depthwise_conv2d),
grouped convs (grouped_conv2d, backends/cpu/grouped.py) and pooling, against the NumPy reference
on both of their copies (AVX-512 and the AVX2 base of the default target). The shapes cover
channel counts that are not whole vectors (5, 13, 58, 116), 3x3, 5x5 and 7x7 windows, strides 1
and 2, dilation, asymmetric windows and padding, rows of fewer output pixels than a tile, group
widths of 1 to 48 (RegNetY's 8, ResNeXt's 4 and 32, RegNetX's 48, widths that are not whole
vectors), a per-channel residual and a residual the memory plan puts on the output (the kernels
accumulate onto it), and activations in the epilogue; also the permutes that swap the innermost
axes (backends/cpu/layout.py), which these models have at their input and in channel shuffles."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from ait_build.backends.cpu import grouped
from ait_build.ir.dims import Dim
from ait_build.ops.reference import run_reference
from ait_build.spec.model import load_model

from .helpers import write_spec
from .test_wide import check_copy, run_copy, skip_unless_runs

B = {"batch": {"min": 1, "max": 4, "opt": 2}}


def n(name, op, inputs, **attrs):
    return {"name": name, "op": op, "inputs": inputs, **attrs}


def dw(name, x, c, k, **attrs):
    return n(name, "conv2d", [x], out_channels=c, kernel=k, groups=c, **attrs)


CONVS = dict(
    dims=B,
    inputs={"a": {"shape": ["batch", 9, 11, 58]}, "b": {"shape": ["batch", 12, 10, 16]},
            "c": {"shape": ["batch", 5, 3, 5]}, "d": {"shape": ["batch", 14, 13, 48]},
            "e": {"shape": ["batch", 8, 8, 116]}, "f": {"shape": ["batch", 6, 7, 96]},
            "g": {"shape": ["batch", 7, 9, 104]}, "col": {"shape": [58]},
            "h": {"shape": ["batch", 5, 6, 192]}, "k": {"shape": ["batch", 4, 3, 256]},
            "t": {"shape": ["batch", 4, 10, 32]}, "u": {"shape": ["batch", 3, 12, 96]},
            "img": {"shape": ["batch", 3, 10, 12]}, "groups2": {"shape": ["batch", 4, 5, 2, 29]},
            "wa": {"shape": ["batch", 14, 14, 96]}, "wb": {"shape": ["batch", 28, 26, 32]},
            "wc": {"shape": ["batch", 17, 15, 64]},
            # over 128 channels with a partial vector: several channel blocks per row
            "dwide": {"shape": ["batch", 6, 7, 200]}},
    graph=[dw("dw3", "a", 58, 3, padding=1, activation="relu"),
           dw("dw3s2", "a", 58, 3, stride=2, padding=1, activation="silu"),
           dw("dw5", "b", 16, 5, padding=2, activation="hardswish"),
           dw("dw5s2", "e", 116, 5, stride=2, padding=2),
           dw("dw7", "d", 48, 7, padding=3, bias=False),
           dw("dw_small", "c", 5, 3, padding=[2, 0], dilation=[2, 1]),
           dw("dw_rect", "b", 16, [3, 5], stride=[2, 1], padding=[1, 2], activation="gelu"),
           dw("dw_wide", "dwide", 200, 3, stride=2, padding=1, activation="relu6"),
           n("max_wide", "max_pool2d", ["dwide"], kernel=3, stride=1, padding=1),
           n("dw_col", "conv2d", ["a", "col"], out_channels=58, kernel=3, groups=58,
             padding=1, activation="relu"),
           # relu -> depthwise + the relu's output -> relu: the add fuses into the conv, whose
           # output the memory plan puts on the residual
           n("pre", "relu", ["e"]), dw("dw_block", "e", 116, 3, padding=1),
           n("dw_sum", "add", ["dw_block", "pre"]), n("dw_out", "relu", ["dw_sum"]),
           # grouped: group widths 8 (two groups a vector), 4, 48 (three vectors a group),
           # 32, 64 (four), 12 and 3 (vectors across group boundaries), 13 (not whole vectors)
           n("g8", "conv2d", ["d"], out_channels=48, kernel=3, padding=1, groups=6,
             activation="relu"),
           n("g8s2", "conv2d", ["g"], out_channels=104, kernel=3, stride=2, padding=1,
             groups=13, activation="relu"),
           n("g4", "conv2d", ["f"], out_channels=96, kernel=3, padding=1, groups=24),
           n("g48", "conv2d", ["f"], out_channels=96, kernel=3, padding=1, groups=2,
             activation="relu"),
           n("g32", "conv2d", ["f"], out_channels=96, kernel=[1, 3], padding=[0, 1], groups=3),
           n("g64", "conv2d", ["f"], out_channels=128, kernel=3, padding=1, groups=2),  # 4 a group
           n("g12", "conv2d", ["d"], out_channels=48, kernel=5, stride=2, padding=2, groups=4),
           n("g6", "conv2d", ["d"], out_channels=24, kernel=3, dilation=2, padding=2, groups=8),
           n("g13", "conv2d", ["g"], out_channels=26, kernel=3, groups=2, padding=1),
           # weights above ait_cpu.h's kGroupFloats: the blocks run in groups (2 of 48-wide
           # groups' blocks, 3 of 64-wide ones, unevenly), each reading part of the channels
           n("g48_groups", "conv2d", ["h"], out_channels=192, kernel=3, padding=1, groups=4,
             activation="relu"),
           n("g64_groups", "conv2d", ["k"], out_channels=256, kernel=3, stride=2, padding=1,
             groups=4),
           # one vector of 8 outputs reading two groups of 16 inputs, rows of 10 pixels: the
           # AVX-512 copy takes the inputs 16 at a time, the second 16 adding to the first's
           # sums in the output lane by lane (8 lanes)
           n("g_tail", "conv2d", ["t"], out_channels=8, kernel=3, padding=1, groups=2,
             activation="relu"),
           # 48-wide groups over 12-pixel rows (a tile of 8 and one of 4): the AVX-512 copy takes
           # the inputs 16 at a time, whole registers adding to the output's sums
           n("g48_rows", "conv2d", ["u"], out_channels=96, kernel=3, padding=1, groups=2),
           n("gpre", "relu", ["f"]),
           n("g_block", "conv2d", ["f"], out_channels=96, kernel=3, padding=1, groups=12),
           n("g_sum", "add", ["g_block", "gpre"]), n("g_out", "silu", ["g_sum"]),
           # grouped by Winograd (whole vectors a group, 3x3 stride 1): F(2x2) on 14x14
           # (RegNetX's 48-wide groups), F(4x4) on 28x26 (edge tiles clipped, 32 -> 64
           # channels, 32-wide groups), F(2x2) without padding on 15x13 (16-wide groups), and
           # a residual the memory plan puts on the output
           n("gw48", "conv2d", ["wa"], out_channels=96, kernel=3, padding=1, groups=2,
             activation="relu"),
           n("gw32_f4", "conv2d", ["wb"], out_channels=64, kernel=3, padding=1, groups=2,
             bias=False, activation="hardswish"),
           n("gw16_pad0", "conv2d", ["wc"], out_channels=64, kernel=3, groups=4),
           n("gwpre", "relu", ["wa"]),
           n("gw_block", "conv2d", ["wa"], out_channels=96, kernel=3, padding=1, groups=6),
           n("gw_sum", "add", ["gw_block", "gwpre"]), n("gw_out", "relu", ["gw_sum"]),
           # pooling: NaN-propagating maximum, padding excluded from or counted in averages
           n("max3s2", "max_pool2d", ["a"], kernel=3, stride=2, padding=1),
           n("max2", "max_pool2d", ["e"], kernel=2, stride=2),
           n("max_rect", "max_pool2d", ["c"], kernel=[3, 2], stride=1, padding=[1, 0]),
           n("avg3", "avg_pool2d", ["a"], kernel=3, stride=1, padding=1),
           n("avg3_pad", "avg_pool2d", ["b"], kernel=3, stride=2, padding=1,
             count_include_pad=False),
           n("avg2", "avg_pool2d", ["f"], kernel=2, stride=2),
           # permutes that swap the innermost axes (backends/cpu/layout.py): an image to NHWC,
           # a channel shuffle of 2 groups, NHWC to NCHW (58 x 99: several tiles each way)
           n("to_nhwc", "permute", ["img"], dims=[0, 2, 3, 1]),
           n("shuffle", "permute", ["groups2"], dims=[0, 1, 2, 4, 3]),
           n("to_nchw", "permute", ["a"], dims=[0, 3, 1, 2])],
    outputs=["dw3", "dw3s2", "dw5", "dw5s2", "dw7", "dw_small", "dw_rect", "dw_wide", "max_wide",
             "dw_col", "dw_out",
             "g8", "g8s2", "g4", "g48", "g32", "g64", "g12", "g6", "g13", "g48_groups", "g64_groups",
             "g_tail", "g48_rows", "g_out", "gw48", "gw32_f4", "gw16_pad0", "gw_out", "max3s2", "max2",
             "max_rect", "avg3", "avg3_pad", "avg2", "to_nhwc", "shuffle", "to_nchw"])


@pytest.fixture(scope="module")
def built(tmp_path_factory, build_spec):
    spec = write_spec(tmp_path_factory.mktemp("channels"), "channel_kernels", **CONVS)
    model, out_dir, _ = build_spec(spec, name="channels")
    return out_dir, model.lib._name, load_model(spec)


def test_kernels_picked(built):
    with open(os.path.join(built[0], "manifest.json")) as fh:
        steps = {s["node"]: s["kernel"] for s in json.load(fh)["steps"] if s.get("node")}
    kinds = {node: kernel.rsplit("_", 1)[0].split("_conv2d")[0] for node, kernel in steps.items()
             if "conv2d" in kernel}
    assert {k for k, v in kinds.items() if v == "depthwise"} == {
        "dw3", "dw3s2", "dw5", "dw5s2", "dw7", "dw_small", "dw_rect", "dw_wide", "dw_col",
        "dw_block"}
    assert {k for k, v in kinds.items() if v == "grouped"} == {
        "g8", "g8s2", "g4", "g48", "g32", "g64", "g12", "g6", "g13", "g48_groups", "g64_groups",
        "g_tail", "g48_rows", "g_block", "gw48", "gw32_f4", "gw16_pad0", "gw_block"}
    winograd = {k: re.findall(r"winograd(\d)", v) for k, v in steps.items() if "grouped" in v}
    assert {k: int(v[0]) for k, v in winograd.items() if v} == {
        "gw48": 2, "gw32_f4": 4, "gw16_pad0": 2, "gw_block": 2}
    assert {k for k, v in steps.items() if v.startswith("transpose")} == {
        "to_nhwc", "shuffle", "to_nchw"}
    # the image's 3 channels and the shuffle's 2 groups are interleaved with a constant count;
    # NHWC -> NCHW (58 channels) takes the tiles
    counts = {}
    for node in ("to_nhwc", "shuffle", "to_nchw"):
        with open(os.path.join(built[0], "src", steps[node] + ".cpp")) as fh:
            found = re.findall(r"constexpr int64_t K = (\d+);", fh.read())
        counts[node] = int(found[0]) if found else None
    assert counts == {"to_nhwc": 3, "shuffle": 2, "to_nchw": None}


@pytest.mark.parametrize("copy", ["avx512", "base"])
def test_both_copies_match_reference(built, tmp_path, copy):
    check_copy(built, tmp_path, copy)


@pytest.mark.parametrize("groups,c,o", [(6, 48, 48), (24, 96, 96), (2, 96, 96), (3, 96, 96),
                                        (4, 48, 48), (8, 48, 24), (2, 104, 26), (13, 104, 104),
                                        (2, 6, 40)])
def test_packing_is_the_grouped_conv(groups, c, o):
    """The packed weights, read as the kernel reads them, give the grouped conv's products: every
    output channel sums exactly its own group's inputs, whatever vectors and groups straddle."""
    rng = np.random.default_rng(groups * 1000 + o)
    weight = rng.standard_normal((o, c // groups, 3, 2)).astype(np.float32)
    vb = grouped.block_vectors(groups, o)
    packed = grouped.pack(weight, groups, vb)
    starts, cin = grouped.vector_inputs(groups, c, o)
    pixel = rng.standard_normal((3, 2, c)).astype(np.float32)  # one pixel's taps [KH][KW][C]
    got = np.zeros(packed.shape[0] * vb * 16, np.float32)
    for b in range(packed.shape[0]):
        ci0 = starts[b * vb]
        assert all(starts[b * vb + v] == ci0 for v in range(vb))  # a block shares its inputs
        # as the kernel: 16 * VB * b / OG * CG, clamped
        assert ci0 == min(16 * vb * b // (o // groups) * (c // groups), c - cin)
        taps = pixel[:, :, ci0:ci0 + cin]
        got[b * vb * 16:(b + 1) * vb * 16] = np.einsum("ijk,ijkl->l", taps, packed[b])
    cg, og = c // groups, o // groups
    want = np.array([np.sum(pixel[:, :, oc // og * cg:(oc // og + 1) * cg] *
                            weight[oc].transpose(1, 2, 0)) for oc in range(o)])
    np.testing.assert_allclose(got[:o], want, rtol=1e-5, atol=1e-5)
    assert not got[o:].any()  # the last vector's lanes past O are zero
    half = grouped.half_inputs(groups, c, o)
    if half:  # each 8-lane half of a vector reads only inputs [half * h, half * (h + 1))
        lanes = packed.reshape(-1, 3, 2, cin, 2, 8)  # [vectors][KH][KW][CIN][half][8]
        for h in (0, 1):
            outside = np.ones(cin, bool)
            outside[half * h:half * (h + 1)] = False
            assert not lanes[:, :, :, outside, h].any()


def test_rule():
    assert grouped.direct_grouped(32, 128, 128)  # ResNeXt
    assert not grouped.direct_grouped(128, 128, 128)  # depthwise
    assert not grouped.direct_grouped(1, 128, 128)  # dense
    assert grouped.block_vectors(21, 1008) == 3  # RegNetX's 48-wide groups
    assert grouped.block_vectors(32, 1024) == 2
    assert grouped.block_vectors(55, 440) == 1  # RegNetY's 8-wide groups
    assert grouped.vector_inputs(55, 440, 440)[1] == 16
    assert grouped.vector_inputs(32, 128, 128)[1] == 16  # 4 groups of 4
    assert grouped.half_inputs(26, 208, 208) == 8  # RegNetY-400MF: a half-vector a group
    assert grouped.half_inputs(55, 440, 440) == 0  # ... but 27.5 vectors: the last one moved
    assert grouped.half_inputs(32, 256, 256) == 8  # ResNeXt-101 32x8d's first stage
    assert grouped.half_inputs(13, 104, 104) == 0  # the last vector's inputs moved back
    assert grouped.half_inputs(32, 128, 128) == 0  # groups of 4
    assert grouped.half_inputs(21, 1008, 1008) == 0  # 48-wide groups
    # Winograd: 3x3 stride-1 windows over groups of whole vectors, the tile by the image
    same = dict(kh=3, kw=3, sh=1, sw=1, dh=1, dw=1)
    assert grouped.winograd_tile(same, 9, 432, 432, Dim.of(14), Dim.of(14)) == 2  # RegNetX's 14x14
    assert grouped.winograd_tile(same, 4, 192, 192, Dim.of(28), Dim.of(28)) == 4
    assert grouped.winograd_tile(same, 32, 256, 256, Dim.of(56), Dim.of(56)) == 0  # 8-wide groups
    assert grouped.winograd_tile(same, 64, 1024, 1024, Dim.of(14), Dim.of(14)) == 2  # 16-wide
    assert grouped.winograd_tile(same, 8, 32, 128, Dim.of(14), Dim.of(14)) == 0  # 4 inputs a group
    assert grouped.winograd_tile(dict(same, sh=2, sw=2), 9, 432, 432, Dim.of(14), Dim.of(14)) == 0
    assert grouped.winograd_tile(same, 9, 432, 432, Dim.of(6), Dim.of(7)) == 0  # 12 tiles of 2x2
    assert grouped.winograd_tile(same, 9, 432, 432, Dim.of("h"), Dim.of(14)) == 0  # sizes vary


@pytest.mark.parametrize("copy", ["avx512", "base"])
def test_max_pool_keeps_nans(tmp_path_factory, build_spec, tmp_path, copy):
    """A NaN anywhere in a window is that window's maximum, as in PyTorch, whether it comes
    before or after the window's largest number."""
    skip_unless_runs(copy)
    spec = write_spec(tmp_path_factory.mktemp("nan_pool"), "nan_pool", dims=B,
                      inputs={"x": {"shape": ["batch", 4, 6, 20]}},
                      graph=[n("mp", "max_pool2d", ["x"], kernel=2, stride=2)], outputs=["mp"])
    model, out_dir, _ = build_spec(spec, name="nan_pool")
    x = np.zeros((1, 4, 6, 20), np.float32)
    x[0, 0, 0, 3] = np.nan  # first tap of window (0, 0), channel 3
    x[0, 1, 1, 3] = 5.0
    x[0, 2, 2, 17] = 5.0  # a later tap: window (1, 1), channel 17 (the second vector on AVX2)
    x[0, 3, 3, 17] = np.nan
    got = run_copy(out_dir, model.lib._name, {"x": x}, tmp_path, copy)["mp"]
    assert np.isnan(got[0, 0, 0, 3]) and np.isnan(got[0, 1, 1, 17])
    assert np.isnan(got).sum() == 2


@pytest.mark.parametrize("copy", ["avx512", "base"])
def test_relu_keeps_nans(tmp_path_factory, build_spec, tmp_path, copy):
    """A NaN stays NaN through a relu, as in PyTorch and the reference: the relu a depthwise conv
    applies on its register tile, a GEMM's epilogue relu (a 1x1 conv) and a standalone one."""
    skip_unless_runs(copy)
    spec = write_spec(tmp_path_factory.mktemp("nan_relu"), "nan_relu", dims=B,
                      inputs={"x": {"shape": ["batch", 5, 6, 24]}},
                      graph=[dw("dw", "x", 24, 3, padding=1, activation="relu"),
                             n("pw", "conv2d", ["x"], out_channels=16, kernel=1,
                               activation="relu"),
                             n("r", "relu", ["x"])], outputs=["dw", "pw", "r"])
    model, out_dir, _ = build_spec(spec, name="nan_relu")
    x = np.random.default_rng(0).standard_normal((1, 5, 6, 24)).astype(np.float32)
    x[0, 2, 3, 5] = np.nan
    x[0, 4, 0, 17] = np.nan  # channel 17: the AVX2 copy's third vector
    got = run_copy(out_dir, model.lib._name, {"x": x}, tmp_path, copy)
    for name, expected in run_reference(load_model(spec), {"x": x}).items():
        assert np.isnan(expected).any(), name
        np.testing.assert_array_equal(np.isnan(got[name]), np.isnan(expected), err_msg=name)
