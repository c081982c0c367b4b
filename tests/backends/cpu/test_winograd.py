"""The cpu backend's Winograd conv2d (backends/cpu/winograd.py): the transform matrices compute a
correlation exactly, the lowering picks Winograd only where its rule says, and built models match
the reference: odd output sizes that leave partial tiles, padding 1 and 0, channel counts that
are not multiples of the vector width, bias/relu/residual epilogues, batches 1 and 3, several
tile chunks per thread, and a residual the memory plan puts on the output (accumulated)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from ait_build.backends.cpu import winograd
from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

from .helpers import tolerance, write_spec

B = {"batch": {"min": 1, "max": 4, "opt": 3}}


def n(name, op, inputs, **attrs):
    return {"name": name, "op": op, "inputs": inputs, **attrs}


@pytest.mark.parametrize("tile", sorted(winograd.TRANSFORMS))
def test_transforms_compute_a_2d_correlation(tile):
    bt, g, at = (np.array(m, dtype=np.float64) for m in winograd.TRANSFORMS[tile])
    rng = np.random.default_rng(tile)
    d, k = rng.standard_normal((tile + 2, tile + 2)), rng.standard_normal((3, 3))
    direct = np.array([[np.sum(d[i:i + 3, j:j + 3] * k) for j in range(tile)]
                       for i in range(tile)])
    fast = at @ ((g @ k @ g.T) * (bt @ d @ bt.T)) @ at.T
    np.testing.assert_allclose(fast, direct, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("tile", sorted(winograd.TRANSFORMS))
def test_generated_transforms_match_the_matrices(tile):
    """The straight-line C the kernel gets (evaluated here as Python) is B^T d B and A^T M A."""
    code = winograd.transform_code(tile)
    bt, _, at = (np.array(m, dtype=np.float64) for m in winograd.TRANSFORMS[tile])
    alpha = tile + 2
    rng = np.random.default_rng(0)
    for key, mat, src, dst in (("input_transform", bt, "d", "v"),
                               ("output_transform", at, "m", "y")):
        x = rng.standard_normal((alpha, alpha))
        env = {f"{src}{i}_{j}": x[i, j] for i in range(alpha) for j in range(alpha)}
        for line in code[key]:
            name, expr = line[len("const float "):-1].split(" = ")
            env[name] = eval(expr.replace("f *", " *"), {}, env)
        want = mat @ x @ mat.T
        got = np.array([[env[f"{dst}{i}_{j}"] for j in range(want.shape[1])]
                        for i in range(want.shape[0])])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


CONVS = dict(
    dims=B,
    inputs={"img": {"shape": ["batch", 13, 15, 36]}, "res": {"shape": ["batch", 13, 15, 40]},
            "big": {"shape": ["batch", 20, 18, 96]}, "wide": {"shape": ["batch", 41, 43, 36]},
            "wide_res": {"shape": ["batch", 41, 43, 40]},
            "big_res": {"shape": ["batch", 20, 18, 120]},
            "mid": {"shape": ["batch", 16, 16, 32]}, "thin": {"shape": ["batch", 29, 31, 16]}},
    graph=[n("pad1_relu", "conv2d", ["img"], out_channels=40, kernel=3, padding=1,
             activation="relu"),
           n("pad0", "conv2d", ["img"], out_channels=33, kernel=3, bias=False),
           n("residual", "conv2d", ["img", "res"], out_channels=40, kernel=3, padding=1,
             activation="relu"),
           n("chunks", "conv2d", ["big"], out_channels=200, kernel=3, padding=1),
           n("f4_residual", "conv2d", ["wide", "wide_res"], out_channels=40, kernel=3, padding=1,
             activation="relu"),
           n("f4_pad0", "conv2d", ["wide"], out_channels=36, kernel=3),
           # F(2x2) through the shared scratch at batches 1 and 3 (90 and 270 tiles), and by
           # columns in the parts' own scratch (64 and 192 tiles: over its limit, under 1024)
           n("few_tiles", "conv2d", ["big", "big_res"], out_channels=120, kernel=3, padding=1,
             activation="relu"),
           n("columns", "conv2d", ["mid"], out_channels=1024, kernel=3, padding=1),
           # 16 input channels, the fewest Winograd takes (SqueezeNet's 16 -> 64 expand convs)
           n("thin16", "conv2d", ["thin"], out_channels=64, kernel=3, padding=1,
             activation="relu"),
           # im2col: too few channels, stride 2, too few tiles
           n("narrow", "conv2d", ["img"], out_channels=8, kernel=3, padding=1),
           n("strided", "conv2d", ["img"], out_channels=40, kernel=3, stride=2, padding=1),
           n("small", "conv2d", ["strided"], out_channels=40, kernel=3)],
    outputs=["pad1_relu", "pad0", "residual", "chunks", "f4_residual", "f4_pad0", "few_tiles",
             "columns", "thin16", "narrow", "strided", "small"])

# relu -> conv -> conv + the relu's output -> relu: the optimizer fuses the add into the second
# conv, and the memory plan puts its output on the residual (the kernel accumulates onto it; a
# model output would be written to the caller's buffer instead, hence the pool)
BLOCK = dict(
    dims=B,
    inputs={"x": {"shape": ["batch", 15, 9, 48]}},
    graph=[n("pre", "relu", ["x"]),
           n("a", "conv2d", ["pre"], out_channels=48, kernel=3, padding=1, activation="relu"),
           n("b", "conv2d", ["a"], out_channels=48, kernel=3, padding=1),
           n("sum", "add", ["b", "pre"]), n("out", "relu", ["sum"]),
           n("pool", "global_avg_pool", ["out"])],
    outputs=["pool"])


def kernels_by_node(out_dir: str) -> dict:
    with open(os.path.join(out_dir, "manifest.json")) as fh:
        manifest = json.load(fh)
    return {s["node"]: s["kernel"] for s in manifest["steps"] if s.get("node")}


def check(model, graph, batch: int, seed: int) -> None:
    inputs = random_inputs(graph, {"batch": batch}, seed=seed)
    got = model.run(inputs)
    for name, expected in run_reference(graph, inputs).items():
        np.testing.assert_allclose(got[name], expected, **tolerance(expected), err_msg=name)


@pytest.fixture(scope="module")
def convs(tmp_path_factory, build_spec):
    spec = write_spec(tmp_path_factory.mktemp("winograd"), "winograd_convs", **CONVS)
    model, out_dir, emission = build_spec(spec, optimize=False, name="winograd")
    return model, load_model(spec), out_dir, emission


def test_rule_picks_the_tile_per_layer(convs):
    _, _, out_dir, _ = convs
    kernels = kernels_by_node(out_dir)
    tiles = {node: (4 if k.startswith("conv2d_winograd4") else 2 if k.startswith(
        "conv2d_winograd2") else 0) for node, k in kernels.items()}
    assert tiles == {"pad1_relu": 2, "pad0": 2, "residual": 2, "chunks": 2, "f4_residual": 4,
                     "f4_pad0": 4, "few_tiles": 2, "columns": 2, "thin16": 4, "narrow": 0,
                     "strided": 0, "small": 0}


def test_few_tiles_take_the_shared_path_up_to_its_limit():
    limit = lambda c, o: winograd.SHARED_FLOATS[2] // (16 * (c + o))
    assert winograd.shared_tiles(4 * 90, 96, 120, 2) == limit(96, 120) > 3 * 90  # "few_tiles"
    assert winograd.shared_tiles(4 * 64, 32, 1024, 2) == limit(32, 1024) < 64  # "columns"
    assert 90 < winograd.shared_tiles(4 * 90, 96, 200, 2) < 3 * 90  # "chunks": batch 1, not 3
    assert winograd.shared_tiles(49, 256, 256, 2) == 49  # ResNet-50's 14x14 layers, batch 1
    # F(4x4): "f4_residual" (121 tiles) shared at batch 1, not 3; ResNet-50's 28x28 layers
    # shared at batch 1 (49 tiles), its 56x56 ones (196) not
    assert 121 < winograd.shared_tiles(4 * 121, 36, 40, 4) < 3 * 121
    assert winograd.shared_tiles(49, 128, 128, 4) == 49
    assert winograd.shared_tiles(196, 64, 64, 4) < 196


def test_several_chunks_per_thread():
    tiles = 3 * 10 * 9  # "chunks" at batch 3
    assert winograd.tile_chunk(tiles, 96, 200, 2) < tiles // 2


@pytest.mark.parametrize("batch", [1, 3])
def test_winograd_convs_match_reference(convs, batch):
    model, graph, _, _ = convs
    check(model, graph, batch, seed=batch)


@pytest.mark.parametrize("gemm", ["blas", "own"])
def test_either_gemm_matches_reference(convs, monkeypatch, gemm):
    """The tile GEMMs multiply U in our panels in a handle that chose our GEMM
    (AIT_CPU_GEMM=own, ait_panel.h; on a CPU without AVX-512 or AVX2 the BLAS runs either way)."""
    from .helpers import CModel
    model, graph, out_dir, emission = convs
    monkeypatch.setenv("AIT_CPU_GEMM", gemm)
    handle = CModel(out_dir, emission, model.lib._name)
    try:
        for batch in (3, 1):
            check(handle, graph, batch, seed=20 + batch)
    finally:
        handle.close()


@pytest.mark.parametrize("batch", [1, 3])
def test_fused_block_matches_reference(tmp_path_factory, build_spec, batch):
    spec = write_spec(tmp_path_factory.mktemp("wblock"), "winograd_block", **BLOCK)
    model, out_dir, _ = build_spec(spec, name=f"wblock{batch}")
    assert all(k.startswith("conv2d_winograd") for node, k in kernels_by_node(out_dir).items()
               if node in ("a", "b"))
    check(model, load_model(spec), batch, seed=10 + batch)


def test_mkl_target_matches_reference(tmp_path, object_cache):
    """The same convs on cpu_mkl (the tile GEMMs through MKL's sgemm), where mkl-devel is
    installed."""
    from ait_build.backends.cpu.toolchain import find_mkl
    from ait_build.errors import AitError
    from ait_build.pipeline import emit
    from ait_build.pipeline import find_target
    from ait_build.backends import toolchain_for

    from .helpers import CModel, build_library
    try:
        find_mkl()
    except AitError as exc:
        pytest.skip(str(exc))
    target = find_target("cpu_mkl")
    spec = write_spec(tmp_path, "winograd_mkl", **CONVS)
    emission = emit(spec, target, str(tmp_path / "out"), optimize=False)
    lib = build_library(toolchain_for(target), str(tmp_path / "out"), emission, object_cache)
    model = CModel(str(tmp_path / "out"), emission, lib)
    try:
        for batch in (1, 3):
            check(model, load_model(spec), batch, seed=20 + batch)
    finally:
        model.close()


def test_resnet50_takes_both_tiles_and_im2col():
    """The rule on ResNet-50's stride-1 3x3 convs: F(4x4) on the 56x56 and 28x28 layers, F(2x2)
    on the 14x14 and 7x7 ones; im2col on the strided ones."""
    from ait_build.pipeline import build_plan
    from ait_build.pipeline import find_target
    plan = build_plan(os.path.join(os.path.dirname(__file__), "..", "..", "..", "specs",
                                   "resnet50.yaml"), find_target("cpu"))
    picked = {}
    for step in plan.steps:
        if step.node.endswith("conv2") and step.kernel.op == "conv2d":
            picked[step.node] = step.kernel.label
    assert {k for k, v in picked.items() if v.startswith("conv2d_winograd4")} == \
        {f"layer1.{i}.conv2" for i in range(3)} | {f"layer2.{i}.conv2" for i in (1, 2, 3)}
    assert {k for k, v in picked.items() if v.startswith("conv2d_winograd2")} == \
        {f"layer3.{i}.conv2" for i in range(1, 6)} | {f"layer4.{i}.conv2" for i in (1, 2)}
    assert len(picked) == 16


def test_two_emits_are_byte_identical(tmp_path):
    """Transformed weights and rendered Winograd kernels do not vary between builds."""
    from ait_build.pipeline import emit
    from ait_build.pipeline import find_target
    spec = write_spec(tmp_path, "winograd_twice", **CONVS)
    outs = [tmp_path / "one", tmp_path / "two"]
    for out in outs:
        emit(spec, find_target("cpu"), str(out))
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert any("winograd" in str(f) for f in files)
    for f in files:
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
