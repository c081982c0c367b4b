"""The per-node time report (ait_build/bench/step_report.py) on a real plan with made-up step times:
steps sum per node, GEMM-shaped nodes carry their FLOPs, every node its bytes, and the rates and
the roofline fraction follow from them and the target's device facts. (The times themselves come
from the library's time_steps() on a GPU.)"""

from __future__ import annotations

import dataclasses

import pytest

from ait_build.bench import step_report
from ait_build.pipeline import build_plan, find_target

from cuda_helpers import spec_path


def test_rows_sum_steps_per_node_and_derive_rates():
    target = find_target("h200")
    plan = build_plan(spec_path("bert_base"), target)
    env = {d: plan.graph.dims[d].opt for d in plan.graph.dims}
    times = [[0.010] * len(plan.steps), [0.012] * len(plan.steps), [0.011] * len(plan.steps)]
    rows = step_report.rows(plan, times, env, target)
    assert sum(r["ms"] for r in rows) == pytest.approx(0.011 * len(plan.steps))
    gemms = [r for r in rows if r["kernels"][0].startswith("gemm")]
    assert gemms and all(r["flops"] > 0 and r["tflops"] > 0 for r in gemms)
    # the qkv projection: 2 * tokens * 768 * 2304 FLOPs; x, the packed weight and bias, the output
    (qkv,) = [r for r in rows if r["node"] == "encoder.layer.0.attention.self.qkv"]
    tokens = env["batch"] * env["seq"]
    assert qkv["flops"] == 2 * tokens * 768 * 2304
    assert qkv["bytes"] == 2 * (tokens * 768 + 768 * 2304 + 2304 + tokens * 2304)
    assert all(r["bytes"] > 0 for r in rows if r["op"])
    # the roofline: the nearer of h200's 989.4 TFLOP/s (float16) and 4.8 TB/s, over the time
    floor = max(qkv["flops"] / 989.4e12, qkv["bytes"] / 4.8e12)
    assert qkv["of_ceiling"] == pytest.approx(floor / (qkv["ms"] / 1e3))
    # a target that records no peak rate: only the memory side of the roofline counts
    bare = dataclasses.replace(target, device=(("hbm_tbps", 4.8),))
    (bare_qkv,) = [r for r in step_report.rows(plan, times, env, bare) if r["node"] == qkv["node"]]
    assert bare_qkv["of_ceiling"] == pytest.approx(qkv["bytes"] / 4.8e12 / (qkv["ms"] / 1e3))
    text = step_report.text(rows)
    assert "total" in text and "slowest nodes" in text
    with pytest.raises(ValueError):
        step_report.rows(plan, [[0.1]], env, target)
