"""bench/dependent_launch_ab.py without a GPU: each mode's model is created under its own
AIT_DEPENDENT_LAUNCH and AIT_CUDA_GRAPHS (which the library reads at create), and the caller's
environment is as it was afterwards, whether it had the variables or not."""

from __future__ import annotations

import os

import bench_scripts

from ait_build.runtime import settings


def test_each_mode_is_created_under_its_settings(monkeypatch):
    tool = bench_scripts.load("dependent_launch_ab")
    seen = []
    monkeypatch.setattr(settings, "Model", lambda build_dir: seen.append(
        (build_dir, os.environ.get("AIT_DEPENDENT_LAUNCH"), os.environ.get("AIT_CUDA_GRAPHS"))))
    monkeypatch.delenv("AIT_DEPENDENT_LAUNCH", raising=False)
    monkeypatch.setenv("AIT_CUDA_GRAPHS", "1")
    for _, dependent, graphs in tool.MODES:
        tool.create("b", dependent, graphs)
    assert seen == [("b", d, g) for _, d, g in tool.MODES]
    assert {(d, g) for _, d, g in tool.MODES} == {("1", "1"), ("0", "1"), ("1", "0"), ("0", "0")}
    assert "AIT_DEPENDENT_LAUNCH" not in os.environ and os.environ["AIT_CUDA_GRAPHS"] == "1"
