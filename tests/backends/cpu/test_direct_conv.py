"""The cpu backend's direct conv path for few input channels (templates/cpu/_conv2d_direct.j2),
and for 1x1 convs of up to 72 input channels whose output rows fill its 6-pixel tiles:
which convs take it, and that built models match the reference on both of the kernel's copies
(the AVX-512 copy runs it with vectors of 16 floats, the base copy of an AVX2 target with 8: panels
of 16 channels). The shapes cover tails of fewer than 6 output pixels, channel panels of 64 + 16
and of 48, strides, asymmetric windows and padding, vertical dilation, a per-column residual and
a residual the memory plan puts on the output (the kernel accumulates onto it), a residual that
is a model input (added tile by tile), and images of a few rows; for the 1x1s, strides 1 and 2,
96 outputs (a panel of 64 and one of 32), a residual on the output, rows whose last tile has
fewer than 6 pixels, and 24 outputs or 33-72 input channels, which the AVX-512 copy runs through
the GEMM instead."""

from __future__ import annotations

import json
import os

import pytest

from ait_build.backends.cpu.gemm import direct_conv, wide_direct
from ait_build.spec.model import load_model

from .helpers import write_spec
from .test_wide import check_copy

B = {"batch": {"min": 1, "max": 4, "opt": 2}}


def n(name, op, inputs, **attrs):
    return {"name": name, "op": op, "inputs": inputs, **attrs}


CONVS = dict(
    dims=B,
    inputs={"img": {"shape": ["batch", 23, 23, 3]}, "gray": {"shape": ["batch", 9, 13, 1]},
            "rgba": {"shape": ["batch", 11, 10, 4]}, "res": {"shape": ["batch", 11, 10, 16]},
            "col": {"shape": [48]}, "short": {"shape": ["batch", 3, 20, 2]},
            "short32": {"shape": ["batch", 5, 23, 32]}, "wide32": {"shape": ["batch", 5, 23, 32]},
            "wide33": {"shape": ["batch", 4, 23, 33]}, "pw16": {"shape": ["batch", 6, 12, 16]},
            "res33": {"shape": ["batch", 4, 23, 32]}, "res144": {"shape": ["batch", 6, 12, 144]},
            "wide73": {"shape": ["batch", 4, 23, 73]}, "row14": {"shape": ["batch", 3, 14, 16]},
            # NCHW images, permuted to NHWC before their convs (an imported CNN's input)
            "nchw": {"shape": ["batch", 3, 21, 17]}, "nchw_odd": {"shape": ["batch", 3, 9, 14]},
            "nchw_pw": {"shape": ["batch", 2, 5, 23]}, "nchw_two": {"shape": ["batch", 3, 6, 7]}},
    graph=[n("stem", "conv2d", ["img"], out_channels=80, kernel=7, stride=2, padding=3,
             activation="relu"),
           # images of 3 rows: a participant's rows run through several images that read the
           # same row numbers, which its ring of input rows must not mix up
           n("short_conv", "conv2d", ["short"], out_channels=32, kernel=3, padding=1),
           n("gray_res", "conv2d", ["gray", "col"], out_channels=48, kernel=[3, 5],
             padding=[1, 2], activation="relu"),
           n("dilated", "conv2d", ["rgba"], out_channels=32, kernel=3, dilation=[2, 1],
             stride=[1, 2], padding=[2, 0], bias=False),
           # relu -> conv + the relu's output -> relu -> pool: the add fuses into the conv, whose
           # output the memory plan puts on the residual (not a model output: that one would be
           # the caller's buffer)
           n("pre", "relu", ["res"]),
           n("block", "conv2d", ["rgba"], out_channels=16, kernel=3, padding=1),
           n("sum", "add", ["block", "pre"]), n("block_out", "relu", ["sum"]),
           n("pool", "global_avg_pool", ["block_out"]),
           # a residual that is a model input stays readable: added in the epilogue of each
           # tile, at the tile's own pixels (3x3 and 1x1)
           n("block_in", "conv2d", ["rgba"], out_channels=16, kernel=3, padding=1),
           n("sum_in", "add", ["block_in", "res"]),
           n("pw_in", "conv2d", ["short32"], out_channels=32, kernel=1),
           n("pw_sum_in", "add", ["pw_in", "wide32"]),
           # direct on the AVX2 copy only: 24 output channels, three 8-float vectors
           n("odd_out", "conv2d", ["img"], out_channels=24, kernel=3),
           # not direct: too many channels, output channels not whole vectors
           n("wide_in", "conv2d", ["res"], out_channels=16, kernel=3, padding=1),
           n("odd12", "conv2d", ["img"], out_channels=12, kernel=3),
           # 1x1 over few channels (MobileNetV3's 16 -> 64, RegNetX's 32 -> 96 and its strided
           # projection): direct on both copies where the outputs are whole 16-float vectors
           n("pointwise", "conv2d", ["img"], out_channels=32, kernel=1),
           n("pw96", "conv2d", ["pw16"], out_channels=96, kernel=1, activation="relu"),
           n("pw_s2", "conv2d", ["short32"], out_channels=48, kernel=1, stride=2),
           n("pw_pre", "relu", ["wide32"]),
           n("pw_block", "conv2d", ["short32"], out_channels=32, kernel=1),
           n("pw_sum", "add", ["pw_block", "pw_pre"]), n("pw_out", "relu", ["pw_sum"]),
           n("pw_pool", "global_avg_pool", ["pw_out"]),
           # direct on the AVX2 copy only, the GEMM on the AVX-512 one: outputs not whole
           # 16-float vectors (MobileNetV3's 24 -> 72), more than 32 input channels (its 64 ->
           # 24), the latter with a residual the plan puts on the output
           n("pw24", "conv2d", ["pw16"], out_channels=24, kernel=1, activation="relu"),
           n("pw_wide", "conv2d", ["wide33"], out_channels=32, kernel=1),
           n("pw_wide_pre", "relu", ["res33"]),
           n("pw_wide_block", "conv2d", ["wide33"], out_channels=32, kernel=1),
           n("pw_wide_sum", "add", ["pw_wide_block", "pw_wide_pre"]),
           n("pw_wide_out", "relu", ["pw_wide_sum"]),
           # not direct: more than 72 input channels; a 14-pixel row (tiles of 6, 6 and 2)
           n("pw_73", "conv2d", ["wide73"], out_channels=32, kernel=1),
           n("pw_row14", "conv2d", ["row14"], out_channels=32, kernel=1),
           # not direct: a same-shaped residual into more than 128 outputs (ResNet-50's conv3)
           n("pw144", "conv2d", ["pw16"], out_channels=144, kernel=1),
           n("pw144_sum", "add", ["pw144", "res144"]),
           # the conv reads the NCHW image itself, the permute emitting nothing: a stem; 24
           # outputs (the AVX-512 copy's im2col gathers from the planes); a 1x1 without padding
           # (its rows copied, not read in place); a permute two convs read (kept)
           n("to_nhwc", "permute", ["nchw"], dims=[0, 2, 3, 1]),
           n("nchw_stem", "conv2d", ["to_nhwc"], out_channels=32, kernel=3, stride=2, padding=1,
             activation="relu"),
           n("odd_nhwc", "permute", ["nchw_odd"], dims=[0, 2, 3, 1]),
           n("nchw_24", "conv2d", ["odd_nhwc"], out_channels=24, kernel=3, padding=[0, 1]),
           n("pw_nhwc", "permute", ["nchw_pw"], dims=[0, 2, 3, 1]),
           n("nchw_1x1", "conv2d", ["pw_nhwc"], out_channels=32, kernel=1),
           n("two_nhwc", "permute", ["nchw_two"], dims=[0, 2, 3, 1]),
           n("two_a", "conv2d", ["two_nhwc"], out_channels=16, kernel=3, padding=1),
           n("two_b", "conv2d", ["two_nhwc"], out_channels=16, kernel=3)],
    outputs=["stem", "short_conv", "gray_res", "dilated", "pool", "sum_in", "pw_sum_in", "wide_in",
             "odd_out", "odd12", "pointwise", "pw96", "pw_s2", "pw_pool", "pw24", "pw_wide",
             "pw_wide_out", "pw_73", "pw_row14", "pw144_sum",
             "nchw_stem", "nchw_24", "nchw_1x1", "two_a", "two_b"])


@pytest.fixture(scope="module")
def built(tmp_path_factory, build_spec):
    spec = write_spec(tmp_path_factory.mktemp("direct"), "direct_convs", **CONVS)
    model, out_dir, _ = build_spec(spec, name="direct")
    return out_dir, model.lib._name, load_model(spec)


def test_rule():
    win = dict(kh=7, kw=7, dh=1, dw=1)
    assert direct_conv(win, 1, 3, 64)  # ResNet-50's stem
    assert not direct_conv(win, 1, 8, 64)  # enough channels for im2col's runs
    assert direct_conv(win, 1, 3, 24)  # ShuffleNet's stem: whole 8-float vectors (AVX2 copy)
    assert not direct_conv(win, 1, 3, 36)  # not whole 8-float vectors
    assert not direct_conv(dict(win, dw=2), 1, 3, 64)  # a pixel's taps not one run
    assert not direct_conv(win, 3, 3, 48)  # grouped
    one = dict(win, kh=1, kw=1)
    assert direct_conv(one, 1, 16, 64)  # MobileNetV3's first expanding 1x1 (K = 16)
    assert direct_conv(one, 1, 32, 96)  # RegNetX's first 1x1
    assert direct_conv(one, 1, 24, 72, wo=56)  # MobileNetV3's 24 -> 72 (AVX2 copy)
    assert direct_conv(one, 1, 64, 256, wo=56)  # ResNet-50's layer-1 downsample
    assert not direct_conv(one, 1, 64, 256, wo=56, residual=True)  # ... its conv3: the GEMM
    assert direct_conv(one, 1, 72, 24, wo=56, residual=True)  # MobileNetV3's 72 -> 24 + shortcut
    assert not direct_conv(one, 1, 80, 480, wo=14)  # the GEMM: 80 channels
    assert not direct_conv(one, 1, 40, 240, wo=14)  # the GEMM: a row of tiles 6, 6 and 2
    assert direct_conv(one, 1, 40, 240, wo=28)  # 28 of 30 pixels
    assert not direct_conv(one, 1, 16, 36, wo=56)  # not whole 8-float vectors
    assert wide_direct(one, 32, 96) and wide_direct(win, 3, 64)
    assert not wide_direct(one, 24, 72) and not wide_direct(one, 64, 256)
    assert not wide_direct(win, 3, 24)
    assert not direct_conv(dict(win, kh=16, kw=16), 1, 3, 768)  # ViT's patches: 768 taps


def test_kernels_picked(built):
    with open(os.path.join(built[0], "manifest.json")) as fh:
        steps = {s["node"]: s["kernel"] for s in json.load(fh)["steps"] if s.get("node")}
    direct = {node for node, kernel in steps.items() if kernel.startswith("conv2d_direct")}
    assert direct == {"stem", "short_conv", "gray_res", "dilated", "block", "block_in", "odd_out",
                      "pointwise", "pw96", "pw_s2", "pw_block", "pw_in", "pw24", "pw_wide",
                      "pw_wide_block", "nchw_stem", "nchw_24",
                      "nchw_1x1", "two_a", "two_b"}
    # the permutes the convs read through: no step; the one two convs read: its own
    assert {"to_nhwc", "odd_nhwc", "pw_nhwc"}.isdisjoint(steps) and "two_nhwc" in steps


@pytest.mark.parametrize("copy", ["avx512", "base"])
def test_both_copies_match_reference(built, tmp_path, copy):
    check_copy(built, tmp_path, copy)


def test_other_convs_share_kernels_across_channel_counts():
    """Only the direct path has its channel counts in its code: ResNet-50's 1x1 convs over
    128-2048 channels (those over layer 1's 64 are direct) all run one kernel per epilogue."""
    from ait_build.pipeline import build_plan
    from ait_build.pipeline import find_target
    plan = build_plan(os.path.join(os.path.dirname(__file__), "..", "..", "..", "specs",
                                   "resnet50.yaml"), find_target("cpu"))
    pointwise = {step.kernel.name for step in plan.steps
                 if step.kernel.label == "conv2d_1x1_bias_relu"}
    assert len(pointwise) == 1, pointwise
