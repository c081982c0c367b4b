"""Which grouped convs run the tensor-core grouped kernel (backends/cuda/grouped.py) in a cuda
build (no compiler, no GPU): 16-bit convs whose groups are whole 16-byte channel vectors, or
become so when up to 4 neighbouring groups are merged (zeros between them in the filters);
depthwise convs, float32 models and groups of 1-3 channels that merging does not make whole keep
the direct kernel. The GPU numerics are the `grouped_conv` groups of test_gpu_numerics."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
import yaml

from ait_build.backends.cuda import grouped
from ait_build.ops.conv import conv2d_nhwc
from ait_build.pipeline import build_plan, emit, find_target
from ait_build.profile.jobs import collect, dim_points

from cuda_op_groups import op_spec


def kernel_sources(spec: str, target: str, out) -> dict:
    emission = emit(spec, find_target(target), str(out))
    return {os.path.basename(k): open(os.path.join(str(out), k)).read()
            for k in emission.kernel_sources}


def spec_with(tmp_path, dtype: str, *convs) -> str:
    doc = {"apiVersion": "ait-build/v1", "kind": "Model", "name": "convs", "dtype": dtype,
           "dims": {"batch": {"min": 1, "max": 4, "opt": 2}},
           "inputs": {"x": {"shape": ["batch", 8, 8, 64]}}, "weights": {"random": {"seed": 0}},
           "graph": [dict(name=f"c{i}", op="conv2d", inputs=["x"], kernel=3, padding=1, **c)
                     for i, c in enumerate(convs)],
           "outputs": [f"c{i}" for i in range(len(convs))]}
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "convs.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_grouped_convs_run_on_tensor_cores(tmp_path, target):
    srcs = kernel_sources(op_spec("grouped_conv"), target, tmp_path)
    assert not [k for k in srcs if k.startswith("conv2d_direct")]
    kernels = [k for k in srcs if k.startswith("conv2d_grouped")]
    # one per conv (their widths, windows or activations differ), but ResNeXt-50's 4 per group
    # with a relu runs as merged groups of 8 -> 8 in w8's kernel
    assert len(kernels) == 12
    widths = sorted(re.search(r"constexpr int CG = (\d+), OG = (\d+);", srcs[k]).groups()
                    for k in kernels)
    assert ("8", "16") in widths and ("24", "24") in widths and ("64", "64") in widths
    assert ("120", "40") in widths and widths.count(("64", "64")) == 2  # split: w120, w64
    for k in kernels:
        assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in srcs[k]
        assert "kLadder[] = { 0, 1 };" in srcs[k]  # no profile entry: the heuristic's two
    w8 = next(k for k in kernels if "CG = 8, OG = 8;" in srcs[k])
    assert "plan<2, 8>, plan<1, 8>" in srcs[w8] and "ait::relu(y[k])" in srcs[w8]


def test_bfloat16_grouped_convs_use_bfloat16_mma(tmp_path):
    srcs = kernel_sources(op_spec("grouped_conv_bfloat16"), "h200", tmp_path)
    kernels = [k for k in srcs if k.startswith("conv2d_grouped")]
    assert kernels and all("m16n8k16.row.col.f32.bf16.bf16.f32" in srcs[k] for k in kernels)


def test_depthwise_float32_and_narrow_groups_stay_direct(tmp_path):
    convs = ({"out_channels": 64, "groups": 64}, {"out_channels": 64, "groups": 16},
             {"out_channels": 64, "groups": 4}, {"out_channels": 48, "groups": 16})
    srcs = kernel_sources(spec_with(tmp_path / "h", "float16", *convs), "h200", tmp_path / "h")
    # depthwise: its own kernel; 4 -> 3 channels per group (no merge of up to 4 groups gives
    # whole vectors): direct; 4 -> 4 (2 merged: 8 -> 8) and 16 -> 16: the grouped kernel
    assert len([k for k in srcs if k.startswith("depthwise_conv2d")]) == 1
    assert len([k for k in srcs if k.startswith("conv2d_direct")]) == 1
    grouped_srcs = [srcs[k] for k in srcs if k.startswith("conv2d_grouped")]
    assert sorted(re.search(r"constexpr int CG = (\d+), OG = (\d+);", s).groups()
                  for s in grouped_srcs) == [("16", "16"), ("8", "8")]
    srcs = kernel_sources(spec_with(tmp_path / "f", "float32", convs[1]), "h200", tmp_path / "f")
    assert not [k for k in srcs if k.startswith("conv2d_grouped")]


@pytest.mark.parametrize("groups,cg,og", [(32, 4, 4), (8, 2, 2), (6, 4, 12), (16, 8, 8)])
def test_merged_filters_compute_the_grouped_conv(groups, cg, og):
    m = grouped.merge(groups, cg, og)
    assert m and (cg * m) % 8 == 0 and (og * m) % 8 == 0 and groups % m == 0
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 6, groups * cg)).astype(np.float32)
    w = rng.standard_normal((groups * og, cg, 3, 3)).astype(np.float32)
    attrs = dict(kernel=3, stride=1, padding=1, dilation=1)
    want = conv2d_nhwc(x, w, dict(attrs, groups=groups))
    merged = grouped.merged_filters(w, groups=groups, m=m)  # KRSC, m groups in one
    assert merged.shape == (groups * og, 3, 3, cg * m)
    got = conv2d_nhwc(x, merged.transpose(0, 3, 1, 2), dict(attrs, groups=groups // m))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # each output channel reads only its own group: the zeros sit where the others' would
    assert np.count_nonzero(merged) == np.count_nonzero(w)


def test_merge_leaves_whole_and_unmergeable_widths():
    assert grouped.merge(16, 8, 8) == 1
    assert grouped.merge(32, 4, 4) == 2 and grouped.merge(64, 2, 2) == 4
    assert grouped.merge(3, 4, 4) == 0  # 2 does not divide 3 groups, 4 neither
    assert grouped.merge(64, 1, 1) == 0  # 8 would be needed (depthwise has its kernel)
    assert grouped.takes("float16", 32, 128, 128, dict(kh=3, kw=3)) == (2, 1)
    assert grouped.takes("float16", 128, 128, 128, dict(kh=3, kw=3)) == ()
    assert grouped.takes("float32", 32, 128, 128, dict(kh=3, kw=3)) == ()


def test_wide_groups_split_into_blocks_of_outputs():
    """A group whose filters exceed a block's 96 KiB of shared memory runs as several blocks of
    outputs, the fewest whose filters fit (whole 16-byte vectors each): RegNetX-8GF's 120 -> 120
    as 3 x 40, RegNetY-16GF's 112 as 7 x 16, RegNetY-32GF's 232 (past 128 accumulators too) as
    29 x 8; groups that fit stay whole."""
    win = dict(kh=3, kw=3)
    assert grouped.takes("float16", 2, 240, 240, win) == (1, 3)
    assert grouped.takes("float16", 4, 448, 448, win) == (1, 7)
    assert grouped.takes("float16", 3, 696, 696, win) == (1, 29)
    assert grouped.takes("float16", 2, 96, 96, win) == (1, 1)  # RegNetX-3.2GF's 48
    def fits(cg, part):
        return part % 8 == 0 and part <= 128 and part * 9 * cg * 2 <= grouped.MAX_FILTER_BYTES
    for cg, og in ((120, 120), (112, 112), (232, 232)):
        parts = grouped.split(cg, og, 9)
        assert fits(cg, og // parts) and og % parts == 0
        assert not any(og % s == 0 and fits(cg, og // s) for s in range(1, parts))
    found, ladder = grouped.candidates(40, 3)  # one part a block
    assert [c.name for c in found] == ["grouped_128x40", "grouped_64x40", "grouped_256x40"]
    assert all(dict(c.context)["gpc"] == 1 for c in found)


def test_split_groups_render_one_part_a_block(tmp_path):
    """2 groups of 32 -> 256: 256 outputs are past a block's 128 accumulator columns, so each
    group runs as 2 blocks of 128 (the kernel's 4 groups), reading its group's inputs."""
    srcs = kernel_sources(spec_with(tmp_path, "float16", {"out_channels": 512, "groups": 2}),
                          "h200", tmp_path)
    (k,) = [v for n, v in srcs.items() if n.startswith("conv2d_grouped")]
    assert "constexpr int CG = 32, OG = 128;" in k and "constexpr int SPLIT = 2;" in k
    assert "plan<2, 1>, plan<1, 1>" in k  # one part a block
    plan = build_plan(spec_with(tmp_path / "p", "float16", {"out_channels": 512, "groups": 2}),
                      find_target("h200"), tune=False)
    (step,) = [s for s in plan.steps if s.kernel.name.startswith("conv2d_grouped")]
    assert step.tuning.tunable.family.endswith(" split=2")
    assert dict(step.tuning.tunable.scalars)["G"] == 4


def test_grouped_convs_are_profiled_per_family(tmp_path):
    plan = build_plan(op_spec("grouped_conv"), find_target("h200"), tune=False)
    jobs, notes = collect(plan, dim_points(plan.graph.dims, {"batch": [1, 8]}))
    assert not notes
    families = {j.family for j in jobs}
    assert "conv2d_grouped float16 act=relu cg=8 og=8 k=3x3 s=1x1 d=1x1" in families
    assert "conv2d_grouped float16 act=silu cg=16 og=16 k=3x3 s=2x2 d=1x1" in families
    job = next(j for j in jobs if "cg=8 og=8" in j.family)
    assert [c.name for c in job.candidates] == [
        "grouped_128x64", "grouped_64x64", "grouped_256x64", "grouped_128x128", "grouped_64x128"]
    assert sorted(p.extent for p in job.problems) == [1, 8]
    values = dict(job.problems[0].values)
    assert values["G"] == 16 and values["C"] == 128 and values["KH"] == 3


def test_candidates_keep_whole_groups_and_bounded_accumulators():
    found, ladder = grouped.candidates(64)
    assert [c.name for c in found] == ["grouped_128x64", "grouped_64x64", "grouped_256x64",
                                       "grouped_128x128", "grouped_64x128"]
    assert ladder == found[:2]
    found, _ = grouped.candidates(24)  # two groups of 24 per block, or five
    assert [c.tile[1] for c in found] == [48, 48, 48, 120, 120]
    found, _ = grouped.candidates(128)  # one group: 128 columns, at most 128 rows
    assert [c.name for c in found] == ["grouped_128x128", "grouped_64x128"]


def test_build_names_the_calls_on_plain_kernels(tmp_path):
    """The build's one-line note (codegen/emit.plain_summary, printed by SCons per model) names
    every call a GPU backend runs on a plain fallback kernel, and why; a model without one gets
    none."""
    convs = ({"out_channels": 48, "groups": 16}, {"out_channels": 64, "groups": 16})
    emission = emit(spec_with(tmp_path / "a", "float16", *convs), find_target("h200"),
                    str(tmp_path / "a"))
    assert emission.plain.startswith("1 GEMM/conv calls run plain kernels")
    assert "c0 (direct conv: 4 -> 3 channels per group)" in emission.plain
    spec = tmp_path / "mm.yaml"
    spec.write_text(yaml.safe_dump({
        "apiVersion": "ait-build/v1", "kind": "Model", "name": "mm", "dtype": "float16",
        "dims": {"batch": {"min": 1, "max": 4, "opt": 2}},
        "inputs": {"a": {"shape": ["batch", 5, 7]}, "b": {"shape": ["batch", 7, 16]}},
        "graph": [{"name": "mm", "op": "matmul", "inputs": ["a", "b"]}], "outputs": ["mm"]}))
    emission = emit(str(spec), find_target("h200"), str(tmp_path / "m"))
    assert "mm (tiled GEMM: K = 7 or N = 16 not a multiple of 2 elements)" in emission.plain
    emission = emit(spec_with(tmp_path / "b", "float16", convs[1]), find_target("h200"),
                    str(tmp_path / "b"))
    assert emission.plain == ""
