"""bench/graph_replay.cu (what a CUDA graph's replay costs per kernel, docs/benchmarks.md)
compiles with the build line its header gives; it runs only where a GPU is (bench/results)."""

from __future__ import annotations

import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROGRAM = os.path.join(REPO, "bench", "graph_replay.cu")
pytestmark = pytest.mark.nvcc


def test_the_program_compiles_as_its_header_says(nvcc, tmp_path):
    with open(PROGRAM, encoding="utf-8") as fh:
        line = next(ln for ln in fh if ln.startswith("//   nvcc "))
    argv = line[len("//   "):].split("&&")[0].split()
    argv[argv.index("-o") + 1] = str(tmp_path / "graph_replay")
    done = subprocess.run([nvcc] + argv[1:], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert os.path.getsize(tmp_path / "graph_replay") > 0
