"""bench/seed_gaps.py on a made-up step report: nodes grouped by kernel kind, each bounded by
its FLOPs and bytes at the report's ceilings, the measured GEMM rate and the fastest kernel."""

from __future__ import annotations

import json

import bench_scripts


def _node(op, kernels, ms, flops, nbytes):
    return dict(op=op, kernels=kernels, ms=ms, flops=flops, bytes=nbytes, ceilings=[1000.0, 5.0],
                tflops=flops / (ms * 1e9))


def _report():
    steps = [_node("linear", ["gemm_gelu"], 2.0, 1e12, 1e6),  # 500 TFLOP/s
             _node("multi_head_attention", ["fmha"], 1.0, 2e11, 1e6),
             _node("layer_norm", ["layer_norm"], 0.5, 0, 1e9),  # 1 GB: 0.2 ms at 5 TB/s
             _node("add", ["add"], 0.01, 0, 1e3)]
    return {"results": [{"model": "m", "dims": {"batch": 8}, "steps": steps,
                         "ait_build": {"median_ms": 3.4}}]}


def test_groups_and_bounds(tmp_path, capsys):
    tool = bench_scripts.load("seed_gaps")
    report = _report()
    assert [tool.group_of(s) for s in report["results"][0]["steps"]] == [
        "GEMMs and convs", "attention", "norms", "elementwise and movement"]
    rate, floor_ms = tool.measured_limits(report["results"])
    assert (rate, floor_ms) == (500.0, 0.01)
    rows, call = tool.case_rows(report["results"][0], rate, floor_ms)
    assert call == 3.4
    by_group = {r[0]: r for r in rows}
    # the GEMM: 1 TFLOP at the 1000 TFLOP/s peak 1 ms, at the measured 500 TFLOP/s 2 ms
    assert by_group["GEMMs and convs"][3:] == [1.0, 2.0]
    assert by_group["attention"][3:] == [0.2, 0.4]
    assert abs(by_group["norms"][3] - 0.2) < 1e-12
    # the add: 1 kB is nothing, but no kernel ran faster than the fastest one (10 us)
    assert by_group["elementwise and movement"][4] == 0.01
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(report))
    import sys
    argv, sys.argv = sys.argv, ["seed_gaps", str(path), "--goals", "m:batch=8=3.0"]
    try:
        assert tool.main() == 0
    finally:
        sys.argv = argv
    out = capsys.readouterr().out
    assert "m:batch=8: call 3.400 ms, goal 3.0 ms" in out
    assert "| all | 4 | 3.510 |" in out
