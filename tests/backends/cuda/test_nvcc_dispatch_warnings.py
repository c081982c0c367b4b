"""Compile-only check that nvcc compiles the GEMM and conv dispatch sources of a cuda build
without a "declared but never referenced" warning. A heuristic ladder of one configuration (a
float32 model's, or a profiled call's: the profile's choice plus the ladder's last) reads no
tile, so the dispatch declares no tile table; a float16 model without a profile
(heuristic_target) has a ladder of two, which reads the tiles. Only the dispatch sources compile
(no CUTLASS headers: about 5 s each on 2 cores). The same for the global average pools of the
pools_and_scales group: a pool over a depthwise conv's tile sums compiles only its second kernel,
not the pixel-summing one and its constants."""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from ait_build.backends import toolchain_for
from ait_build.pipeline import build_plan, emit, find_target
from cuda_helpers import fp16_spec, heuristic_target, spec_path
from cuda_op_groups import op_spec

pytestmark = pytest.mark.nvcc


def assert_compile_without_unused(target, out, tmp_path, kernels) -> None:
    """Each kernel's source in `out` compiles alone, two at a time, without nvcc's warning."""
    tc = toolchain_for(target)

    def compile_one(kernel):
        cmd = tc.compile_command(str(out / kernel.source), str(tmp_path / f"{kernel.name}.o"))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]
        return kernel, proc.stderr

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(compile_one, kernels))
    for kernel, stderr in results:
        assert "declared but never referenced" not in stderr, f"{kernel.source}:\n{stderr}"
        assert os.path.getsize(tmp_path / f"{kernel.name}.o") > 0


@pytest.mark.parametrize("ladder", [1, 2])
def test_gemm_and_conv_dispatch_compile_without_unused_variables(nvcc, tmp_path, ladder):
    if ladder == 1:
        target, spec = find_target("a100"), spec_path("tiny_cnn")
    else:
        target, spec = find_target(heuristic_target("a100", str(tmp_path))), fp16_spec("tiny_cnn")
    out = tmp_path / "out"
    emit(spec, target, str(out))
    dispatches = [k for k in build_plan(spec, target).unique_kernels() if k.parts]
    labels = {re.sub(r"_(relu|gelu|tanh)$", "", k.label) for k in dispatches}
    assert labels == {"gemm", "conv2d"}, labels
    tiles = [("kTileM" in (out / k.source).read_text()) for k in dispatches]
    assert tiles == [ladder > 1] * len(dispatches), tiles
    assert_compile_without_unused(target, out, tmp_path, dispatches)


def test_global_avg_pools_compile_without_unused_variables(nvcc, tmp_path):
    target, spec = find_target("h200"), op_spec("pools_and_scales")
    out = tmp_path / "out"
    emit(spec, target, str(out))
    pools = [k for k in build_plan(spec, target).unique_kernels() if k.op == "global_avg_pool"]
    sources = {k.name: (out / k.source).read_text() for k in pools}
    # both forms: over the feature map, and over a depthwise conv's tile sums
    assert {"kInFlight" in text for text in sources.values()} == {True, False}
    assert_compile_without_unused(target, out, tmp_path, pools)
