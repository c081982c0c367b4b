"""Model weights as GEMM operands (templates/cpu/include/ait_packed.h, used by gemm_tile for
linear layers and convs): in MKL's packed layout, or in the panels of our own GEMM (ait_panel.h,
AIT_CPU_GEMM=own). A small C++ program multiplies through the headers with and without
the copies and checks both against a loop in double, over the splits gemm_tile makes (one part,
parts by columns, parts by rows, one or several row chunks per part), transposed and scaled
weights, accumulation, and for the panels the tails: rows past a multiple of the tile's (4 on
AVX-512, 6 on AVX2), columns past a multiple of 64 (and of the AVX2 tile's 16), K past a pass
(1024 on both). It builds against MKL (skipped where the mkl-devel wheel
is not installed; CI installs it on x86-64) and against OpenBLAS. Built models (linears, convs
with more output channels than K, and convs of few rows into many channels) match the reference
at batch sizes that take each
split, with packing on and off and with either GEMM. The panels need AVX-512 or AVX2 with FMA:
on a CPU with neither AIT_CPU_GEMM=own falls back to the BLAS, which the tests check instead."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from ait_build.codegen.render import templates_dir
from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

from .helpers import cpu_flags, cpu_vendor, tolerance, write_spec

PROGRAM = r"""
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "ait_cpu.h"

// C = alpha * A op(B) (+ C) through gemm_tile's parts, with B packed or plain; prints the
// largest difference of either from a plain loop in double, relative to the largest |C|
static int compare(int64_t M, int64_t N, int64_t K, int nt, bool trans_b, float alpha, bool acc) {
  std::vector<float> a(M * K), b(K * N), c0(M * N), c1(M * N);
  std::vector<double> want(M * N);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 37 % 101) - 50) / 50.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 53 % 97) - 48) / 48.0f;
  for (size_t i = 0; i < c0.size(); ++i) c0[i] = c1[i] = static_cast<float>(i % 7) - 3.0f;
  ait::ThreadPool pool(2);
  ait::PackedWeights packs;
  ait::Ctx cx{nullptr, nullptr, 0, 2, &pool, &packs};
  auto epi = [](int64_t, int64_t, int64_t, int64_t) {};
  for (int packed = 0; packed < 2; ++packed) {
    float* c = packed ? c1.data() : c0.data();
    const ait::Gemm g{M, N, K, a.data(), K, false, b.data(), trans_b ? K : N, trans_b, c, N,
                      alpha, acc, packed ? &packs : nullptr};
    ait::parallel_for(cx, nt, nt > 1, [&](int64_t t, int) { ait::gemm_tile(g, static_cast<int>(t), nt, epi); });
  }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0.0;
      for (int64_t k = 0; k < K; ++k)
        sum += static_cast<double>(a[i * K + k]) * b[trans_b ? j * K + k : k * N + j];
      want[i * N + j] = alpha * sum + (acc ? static_cast<double>((i * N + j) % 7) - 3.0 : 0.0);
    }
  double diff = 0.0, scale = 1e-30;
  for (size_t i = 0; i < c0.size(); ++i) {
    diff = std::max({diff, std::fabs(c0[i] - want[i]), std::fabs(c1[i] - want[i])});
    scale = std::max(scale, std::fabs(want[i]));
  }
  return std::printf("%g\n", diff / scale) < 0;
}

// the cache: the same request gives the same copy, another column slice or layout another one
static int cache() {
  std::vector<float> b(64 * 48, 1.0f);
  ait::PackedWeights packs;
  const bool own = packs.own_gemm(1000, 64);
  auto get = [&](const float* p, int64_t n) { return own ? packs.panels(p, 64, n, 48, false, 1.0f)
                                                          : packs.get(p, 64, n, 48, false, 1.0f); };
  const float* whole = get(b.data(), 48);
  const float* again = get(b.data(), 48);
  const float* slice = get(b.data() + 16, 32);
  const float* other = own ? packs.get(b.data(), 64, 48, 48, false, 1.0f)
                           : packs.panels(b.data(), 64, 48, 48, false, 1.0f);
  return std::printf("%d %d %d %d\n", whole != nullptr, whole == again, slice != whole,
                     other != whole) < 0;
}

int main(int argc, char** argv) {
  if (std::strcmp(argv[1], "cache") == 0) return cache();
  if (std::strcmp(argv[1], "own") == 0) {  // 1, 2, 3 and 1000 rows of depth 64, 3 of 128
    ait::PackedWeights packs;
    return std::printf("%d %d %d %d %d\n", packs.own_gemm(1, 64), packs.own_gemm(2, 64),
                       packs.own_gemm(3, 64), packs.own_gemm(1000, 64), packs.own_gemm(3, 128)) < 0;
  }
  return compare(std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3]), std::atoi(argv[4]),
                 argv[5][0] == 't', static_cast<float>(std::atof(argv[6])), argv[7][0] == 'a');
}
"""


def mkl_or_skip():
    from ait_build.backends.cpu.toolchain import find_mkl
    from ait_build.errors import AitError
    try:
        return find_mkl()
    except AitError as exc:
        pytest.skip(str(exc))


def openblas():
    from ait_build.backends.cpu.toolchain import find_openblas
    return find_openblas()


@pytest.fixture(scope="module", params=["mkl", "openblas"])
def program(request, tmp_path_factory):
    blas = mkl_or_skip() if request.param == "mkl" else openblas()
    d = tmp_path_factory.mktemp(f"packed_{request.param}")
    (d / "main.cpp").write_text(PROGRAM)
    exe = str(d / "packed_test")
    headers = [os.path.join(templates_dir(), folder, "include") for folder in ("common", "cpu")]
    subprocess.run(["g++", "-O2", "-std=c++17", "-pthread", "-I", headers[0], "-I", headers[1],
                    "-I", blas.include_dir,
                    *[f"-D{m}" for m in blas.defines], str(d / "main.cpp"), "-o", exe,
                    "-L", blas.lib_dir, *[f"-l{name}" for name in blas.libs],
                    f"-Wl,-rpath,{blas.lib_dir}"], check=True)
    return exe


@pytest.fixture(params=["blas", "own"])
def gemm(request, monkeypatch):
    """AIT_CPU_GEMM for the handles created in this test; 'own' needs AVX-512 or AVX2 with FMA
    (else the BLAS runs)."""
    monkeypatch.setenv("AIT_CPU_GEMM", request.param)
    return request.param


def run(exe, *args) -> list:
    return subprocess.run([exe, *map(str, args)], check=True, capture_output=True,
                          text=True).stdout.split()


def has_tiles(flags: set) -> bool:
    return os.uname().machine == "x86_64" and ("avx512f" in flags or {"avx2", "fma"} <= flags)


def test_the_chosen_gemm_runs(program, gemm):
    want = gemm == "own" and has_tiles(cpu_flags())
    assert run(program, "own") == [str(int(want))] * 5


def test_the_default_gemm_by_cpu_and_rows(program, monkeypatch):
    """Unforced: our GEMM for every product on AMD CPUs with AVX-512, for products of at most two
    rows or of depth 128 and more on AMD CPUs with AVX2 only, the BLAS elsewhere."""
    monkeypatch.delenv("AIT_CPU_GEMM", raising=False)
    flags = cpu_flags()
    amd = cpu_vendor() == "AuthenticAMD" and has_tiles(flags)
    narrow_or_deep, wide = amd, amd and "avx512f" in flags
    assert run(program, "own") == [str(int(x)) for x in
                                   (narrow_or_deep, narrow_or_deep, wide, wide, narrow_or_deep)]


def test_cache_keeps_one_copy_per_request(program, gemm):
    got = run(program, "cache")  # made, same again, a slice differs, the other layout differs
    if run(program, "own")[3] == "1" or "packed_mkl" in program:  # panels for 1000 x 64
        assert got == ["1", "1", "1", "1"]
    else:  # OpenBLAS has no packed layout: nothing to cache (the panels still are)
        assert got == ["0", "1", "0", "1"]


@pytest.mark.parametrize("m,n,k,parts", [
    (5, 40, 24, 1),      # one part: the whole weight
    (8, 200, 96, 4),     # few rows, wide: parts split the columns (each packs its own slice)
    (300, 40, 96, 4),    # many rows: parts split the rows and share the whole packed weight
    (3, 130, 50, 4),     # an odd column count, parts with no rows to do
    (700, 1024, 64, 1),  # a part of many rows: several row chunks, the last one short
    (200, 3000, 16, 1),  # under 256 rows but a tile over 2 MiB: two row chunks, not one call
    (6, 70, 2500, 2),    # panels: 4 + 2 rows, 64 + 6 columns, K in three passes
    (1, 1000, 2048, 2),  # one row (a classifier at batch 1): two passes, partial panels
    (13, 37, 1100, 1),   # AVX2 tiles: 6 + 6 + 1 rows, 16 + 16 + 5 columns, two passes of K
])
@pytest.mark.parametrize("trans_b", ["n", "t"])
def test_packed_and_plain_gemms_match_a_loop(program, gemm, m, n, k, parts, trans_b):
    for alpha, acc in ((1.0, "-"), (0.5, "a")):
        (rel,) = run(program, m, n, k, parts, trans_b, alpha, acc)
        assert float(rel) < 1e-5, (alpha, acc, rel)


LINEARS = dict(
    dims={"batch": {"min": 1, "max": 8, "opt": 2}},
    inputs={"x": {"shape": ["batch", 40, 96]}, "img": {"shape": ["batch", 6, 6, 16]},
            "deep": {"shape": ["batch", 4, 4, 300]}},
    graph=[{"name": "wide", "op": "linear", "inputs": ["x"], "out_features": 200,
            "activation": "gelu"},
           {"name": "narrow", "op": "linear", "inputs": ["wide"], "out_features": 24},
           # 200 rows into 480 columns at batch 5: fewer rows than columns, but at least 96 for
           # each of two parts, so they split its rows (ait_cpu.h's split_rows); columns at
           # batches 1 (40 rows) and 8 (320 rows in four parts)
           {"name": "wider", "op": "linear", "inputs": ["x"], "out_features": 480,
            "activation": "relu"},
           # convs with more output channels than K pack too: a 1x1 (36 rows x 200 at batch 1:
           # parts split columns; 288 rows at batch 8: rows) and a strided 1x1 (im2col)
           {"name": "expand", "op": "conv2d", "inputs": ["img"], "out_channels": 200,
            "kernel": 1, "activation": "relu"},
           {"name": "strided", "op": "conv2d", "inputs": ["img"], "out_channels": 40,
            "kernel": 1, "stride": 2},
           # a 3x3 with fewer outputs than K (144): MKL multiplies it plain, the panels packed
           {"name": "square", "op": "conv2d", "inputs": ["img"], "out_channels": 70,
            "kernel": 3, "padding": 1, "activation": "relu"},
           # fewer outputs than K, but at most 256 rows (16 at batch 1, 128 at batch 8) into at
           # least 256 channels (ait_cpu.h's kPackedRows): MKL multiplies them packed, a 1x1
           # and a 3x3 (im2col)
           {"name": "reduce", "op": "conv2d", "inputs": ["deep"], "out_channels": 256,
            "kernel": 1, "activation": "relu"},
           {"name": "reduce3", "op": "conv2d", "inputs": ["deep"], "out_channels": 256,
            "kernel": 3, "padding": 1}],
    outputs=["wide", "narrow", "wider", "expand", "strided", "square", "reduce", "reduce3"])


@pytest.fixture(scope="module", params=["cpu_mkl", "cpu_openblas"])
def linears(request, tmp_path_factory, object_cache):
    if request.param == "cpu_mkl":
        mkl_or_skip()
    from ait_build.pipeline import emit
    from ait_build.pipeline import find_target
    from ait_build.backends import toolchain_for

    from .helpers import build_library
    d = tmp_path_factory.mktemp("packed_model")
    spec = write_spec(d, "packed_linears", **LINEARS)
    target = find_target(request.param)
    emission = emit(spec, target, str(d / "out"), optimize=False)
    lib = build_library(toolchain_for(target), str(d / "out"), emission, object_cache)
    return str(d / "out"), emission, lib, load_model(spec)


@pytest.mark.parametrize("pack", ["1", "0"])
def test_linears_and_convs_match_reference(linears, gemm, monkeypatch, pack):
    """With two threads: at batch 1 "wide" (40 x 200) splits its columns, at batch 8 (320 rows)
    its rows, "wider" its rows at batch 5; "narrow" always splits rows. Each handle packs on its
    first run; the second run reuses the copies. Without packing (AIT_PACK_WEIGHTS=0) the BLAS
    multiplies plain weights, whichever GEMM was asked for."""
    from .helpers import CModel
    out_dir, emission, lib, graph = linears
    monkeypatch.setenv("AIT_NUM_THREADS", "2")
    monkeypatch.setenv("AIT_PACK_WEIGHTS", pack)
    model = CModel(out_dir, emission, lib)
    try:
        for batch in (1, 8, 5, 1):
            inputs = random_inputs(graph, {"batch": batch}, seed=batch)
            got = model.run(inputs)
            for name, expected in run_reference(graph, inputs).items():
                np.testing.assert_allclose(got[name], expected, **tolerance(expected), err_msg=name)
    finally:
        model.close()
