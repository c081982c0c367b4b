"""Which GPU-layer kernel the bandwidth-bound families take (no compiler needed): depthwise convs
take depthwise_conv2d.cu.j2 with the vector width their channels allow, squeeze-excitation's
gate mul the channel scale, other muls the elementwise template, and the new epilogue
activations reach CUTLASS as functors (hardtanh's bounds in its type)."""

from __future__ import annotations

import pytest

from ait_build.pipeline import build_plan, find_target
from cuda_op_groups import op_spec


@pytest.mark.parametrize("target", ["h200", "mi250"])
def test_depthwise_convs_take_the_depthwise_kernel(target):
    plan = build_plan(op_spec("depthwise"), find_target(target))
    dw = {s.node: s.kernel for s in plan.steps if s.kernel.label.startswith("depthwise_conv2d")}
    assert len(dw) == 12
    assert all(k.template == "gpu/depthwise_conv2d.cu.j2" for k in dw.values())
    vec = {node: dict(k.context)["vec"] for node, k in dw.items()}
    assert (vec["dw3"], vec["dw5"], vec["dw7_res"], vec["dw3_c12"], vec["dw3_c5"]) == \
        (8, 4, 4, 4, 1)
    strip = {node: dict(k.context)["tw"] for node, k in dw.items()}
    assert (strip["dw3"], strip["dw5"], strip["dw3_s2"]) == (7, 6, 7)  # 13 -> 2 x 7; 12 -> 2 x 6


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
