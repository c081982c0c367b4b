"""bench/stage_errors.py without a GPU: a spec imported from PyTorch, its intermediate nodes as
outputs of a cpu build, beside the same modules' outputs through forward hooks."""

from __future__ import annotations

import json
import os

import pytest

import bench_scripts
from ait_build.cli.main import main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.torch
def test_stage_errors_on_a_cpu_build(tmp_path, monkeypatch):
    pytest.importorskip("torchvision")
    monkeypatch.syspath_prepend(REPO)  # tests.importers.zoo:small_swin
    monkeypatch.chdir(tmp_path)
    assert main(["import", "torch", "tests.importers.zoo:small_swin", "--input",
                 "x:batch,3,32,32", "--dim", "batch=1:2:1", "--dtype", "float16",
                 "-o", "small_swin.yaml"]) == 0
    points = "features.0.2,features.1.0.add_1=features.1.0,norm,head"
    assert bench_scripts.load("stage_errors").main(["small_swin.yaml", "--target", "cpu", "--device", "cpu", "--batch",
                         "1", "--points", points, "--json", "rows.json"]) == 0
    with open("small_swin_points.yaml") as fh:  # the copy, beside the spec (its weights file)
        assert "- features.1.0.add_1\n" in fh.read()
    rows = json.load(open("rows.json"))
    assert [r["point"] for r in rows] == ["features.0.2", "features.1.0.add_1", "norm", "head"]
    # each node against its own module: float16 weights and storage, far from a mismatch's ~1
    for r in rows:
        assert 0 < r["ours"] < 2e-3 and 0 < r["torch_float16"] < 1e-2, r
