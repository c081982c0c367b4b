"""bench/ort_matmul.py: ONNX Runtime's one-node MatMul computes A @ B with the B it was given, and
the script prints one rate per shape."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import bench_scripts


def test_the_session_multiplies_by_its_constant():
    pytest.importorskip("onnxruntime")
    tool = bench_scripts.load("ort_matmul")
    M, K, N = 5, 8, 3
    a = np.random.default_rng(2).random((M, K), dtype=np.float32)
    b = np.random.default_rng(0).random((K, N), dtype=np.float32) - 0.5  # the script's B
    (c,) = tool.session(K, N, M).run(None, {"a": a})
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


def test_one_rate_per_shape(monkeypatch, capsys):
    pytest.importorskip("onnxruntime")
    tool = bench_scripts.load("ort_matmul")
    monkeypatch.setattr(sys, "argv", ["ort_matmul", "--shapes", "4x8x16,2x4x4", "--rounds", "1"])
    tool.main()
    lines = capsys.readouterr().out.split()
    assert lines[0] == "M,K,N,ort_gflops" and len(lines) == 3
    assert [line.split(",")[:3] for line in lines[1:]] == [["4", "8", "16"], ["2", "4", "4"]]
    assert all(float(line.split(",")[3]) > 0 for line in lines[1:])
