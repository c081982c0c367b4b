"""Which GPU-layer kernel the bandwidth-bound families take (no compiler needed): depthwise convs
take depthwise_conv2d.cu.j2 with the tile their channels and shape allow, squeeze-excitation's
gate mul the channel scale, other muls the elementwise template, and the new epilogue
activations reach CUTLASS as functors (hardtanh's bounds in its type)."""

from __future__ import annotations

import pytest

from ait_build.backends.gpu.depthwise import Tile, plan_tile
from ait_build.pipeline import build_plan, find_target
from cuda_op_groups import IMAGENET_DEPTHWISE, op_spec


@pytest.mark.parametrize("target", ["h200", "mi250"])
def test_depthwise_convs_take_the_depthwise_kernel(target):
    plan = build_plan(op_spec("depthwise"), find_target(target))
    dw = {s.node: dict(s.kernel.context) for s in plan.steps
          if s.kernel.label.startswith("depthwise_conv2d")}
    assert len(dw) == 15
    assert all(s.kernel.template == "gpu/depthwise_conv2d.cu.j2" for s in plan.steps
               if s.node in dw)
    # 4 channels a thread where C allows; a pixel's slice is C up to 128 bytes, else 64-128
    # bytes of whole sectors dividing C, else 64 bytes with the last slice partial (136, 132)
    assert {n: (c["vec"], c["slice"], c["gvec"]) for n, c in dw.items()
            if n in ("dw3", "dw5", "dw7_res", "dw3_c12", "dw3_c5", "dw3_slices_res",
                     "dw7_c132")} == {
        "dw3": (4, 16, 8), "dw5": (4, 24, 8), "dw7_res": (4, 32, 8), "dw3_c12": (4, 12, 4),
        "dw3_c5": (1, 5, 1), "dw3_slices_res": (4, 32, 8), "dw7_c132": (4, 32, 4)}
    for ctx in dw.values():
        tile = Tile(**{k: ctx[k] for k in ("slice", "vec", "px", "gw", "th", "gvec",
                                           "raw_window")})
        rows = (tile.th - 1) * ctx["sh"] + (ctx["kh"] - 1) * ctx["dh"] + 1
        cols = (tile.gw * tile.px - 1) * ctx["sw"] + (ctx["kw"] - 1) * ctx["dw"] + 1
        staged = 2 if tile.raw_window else 4  # the op group is float16
        assert tile.threads <= 256
        assert (rows * cols * staged + ctx["kh"] * ctx["kw"] * 4) * tile.slice <= 44 * 1024
        # windows in the input's type where the target copies without registers (cp.async)
        assert tile.raw_window == (target == "h200")


@pytest.mark.parametrize("raw_windows", [False, True])
@pytest.mark.parametrize("itemsize", [2, 4])
def test_depthwise_tiles_of_imagenet_models(itemsize, raw_windows):
    """The planned tile of every ImageNet depthwise conv: slices of whole sectors, 64-128 bytes
    (or the whole pixel), blocks of 64-256 threads; windows of stride 1 reuse inputs across
    strips of at least 5 outputs; 2 channels a thread at 5x5/2 with windows in the input's type
    (fewer registers: depthwise.thread_channels), else 4."""
    for size, c, k, s, _ in IMAGENET_DEPTHWISE:
        ho = (size + 2 * (k // 2) - k) // s + 1
        win = dict(kh=k, kw=k, sh=s, sw=s, dh=1, dw=1)
        tile = plan_tile(itemsize, c, ho, ho, win, raw_windows)
        assert tile.raw_window == raw_windows
        assert tile.vec == (2 if raw_windows and s == 2 and k == 5 else 4), (size, c, k, s, tile)
        slice_bytes = tile.slice * itemsize
        assert tile.slice == c or 64 <= slice_bytes <= 128 and slice_bytes % 32 == 0, \
            (size, c, k, s, tile)
        assert 64 <= tile.threads <= 256 or tile.threads == tile.slice // tile.vec * ho, \
            (size, c, tile)
        if s == 1:
            assert tile.px >= 5, (size, c, k, s, tile)


def test_only_gate_muls_take_the_channel_scale():
    plan = build_plan(op_spec("pools_and_scales"), find_target("h200"))
    labels = {s.node: s.kernel.label for s in plan.steps}
    for node in ("scaled", "scaled_first", "scaled_shared", "scaled_odd"):
        assert labels[node] == "channel_scale", (node, labels[node])
    plan = build_plan(op_spec("elementwise"), find_target("h200"))
    assert "channel_scale" not in {s.kernel.label for s in plan.steps}


def test_epilogue_activations_reach_cutlass_as_functors():
    plan = build_plan(op_spec("epilogue_activations"), find_target("a100"))
    acts = {dict(p.context).get("act") for s in plan.steps for p in (s.kernel,) + s.kernel.parts}
    assert {"ait::ActRelu6", "ait::ActHardsigmoid",
            "ait::Hardtanh<0xbf000000u, 0x40000000u>::Act",
            "ait::Hardtanh<0xff800000u, 0x3e800000u>::Act"} <= acts, acts
