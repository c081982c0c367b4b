"""The MFMA GEMM's tile and index math, without an AMD GPU (none is available to this project).

`backends/rocm/mfma.py` LAYOUT holds the C expressions the kernels (templates/rocm/_mfma.j2)
index with: which element of A, B and the result each lane holds. Here a NumPy emulation runs a
whole grid of block tiles with those same expressions: LDS staging by block and K step, each
wave's MFMA tiles, every instruction's operands gathered per lane, the instruction itself done
the way the ISA places operands and results in lanes (ISA_* below, the inverse form AMD's matrix
instruction calculator prints: element -> lane, item), and the epilogue's writes with bias,
residual, alpha and activation; the result is checked against NumPy's A @ B. The implicit-GEMM
conv's gather (`im2col` in conv2d_mfma.cu.j2) is compiled from the rendered source with g++ and
checked against a direct convolution.
"""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from ait_build.backends.rocm import mfma

from . import skip_without_hipcc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


# -- the ISA's placement of one 32 x 32 x K MFMA's operands (CDNA2 ISA; AMD's matrix instruction
# calculator, `--instruction v_mfma_f32_32x32x8f16 --detail-instruction`): element -> (lane, item)
def isa_a(i: int, k: int, kl: int) -> tuple:
    return i + 32 * (k // kl), k % kl


def isa_b(k: int, j: int, kl: int) -> tuple:
    return j + 32 * (k // kl), k % kl


def isa_d(i: int, j: int) -> tuple:
    return j + 32 * ((i // 4) % 2), 4 * (i // 8) + i % 4


def expr(name: str, **names) -> int:
    """A LAYOUT expression evaluated as C would (every operand non-negative: / is //)."""
    return eval(mfma.LAYOUT[name].replace("/", "//"), {}, names)  # our own constant strings


def hardware_mfma(fa: np.ndarray, fb: np.ndarray, kl: int) -> np.ndarray:
    """One instruction: per-lane operands [64, kl] -> per-lane results [64, 16], as the ISA lays
    them out (acc += A B is the caller's)."""
    k = 2 * kl
    a = np.array([[fa[isa_a(i, kk, kl)] for kk in range(k)] for i in range(32)])
    b = np.array([[fb[isa_b(kk, j, kl)] for j in range(32)] for kk in range(k)])
    d = a @ b
    out = np.zeros((64, 16))
    for i in range(32):
        for j in range(32):
            out[isa_d(i, j)] = d[i, j]
    return out


def emulate(config, dtype: str, a: np.ndarray, b_nk: np.ndarray, bias, res, alpha: float, act):
    """The kernel's grid on NumPy: out[M, N] = act(alpha * a @ b_nk.T + bias + res). Lanes are
    array axes: each LAYOUT expression is evaluated once over all 64 lanes (and items)."""
    ctx = dict(config.context)
    bm, bn, bk, wm_, wn_ = (ctx[k] for k in ("tile_m", "tile_n", "tile_k", "wave_m", "wave_n"))
    kl = mfma.INSTRUCTIONS[dtype].per_lane
    ki = 2 * kl
    lane, j, r = np.arange(64)[:, None], np.arange(kl)[None, :], np.arange(16)[None, :]
    a_row, a_k = expr("a_row", lane=lane) + 0 * j, expr("a_k", lane=lane, j=j, KL=kl)
    b_col, b_k = expr("b_col", lane=lane) + 0 * j, expr("b_k", lane=lane, j=j, KL=kl)
    c_row, c_col = expr("c_row", lane=lane, r=r), expr("c_col", lane=lane) + 0 * r
    m, k = a.shape
    n = b_nk.shape[0]
    waves_n = bn // wn_
    out = np.full((m, n), np.nan)
    for m0 in range(0, m, bm):
        for n0 in range(0, n, bn):
            acc = {}
            for k0 in range(0, k, bk):
                sa = np.zeros((bm, bk))  # the loaders: zero outside M x K and N x K
                sa[:min(bm, m - m0), :min(bk, k - k0)] = a[m0:m0 + bm, k0:k0 + bk]
                sb = np.zeros((bn, bk))
                sb[:min(bn, n - n0), :min(bk, k - k0)] = b_nk[n0:n0 + bn, k0:k0 + bk]
                for wave in range(ctx["waves"]):
                    wm, wn = (wave // waves_n) * wm_, (wave % waves_n) * wn_
                    for kk in range(0, bk, ki):
                        for fi in range(wm_ // 32):
                            for fj in range(wn_ // 32):
                                fa = sa[wm + 32 * fi + a_row, kk + a_k]
                                fb = sb[wn + 32 * fj + b_col, kk + b_k]
                                key = (wave, fi, fj)
                                acc[key] = acc.get(key, 0) + hardware_mfma(fa, fb, kl)
            for (wave, fi, fj), regs in acc.items():  # the epilogue
                wm, wn = m0 + (wave // waves_n) * wm_, n0 + (wave % waves_n) * wn_
                rows, cols = wm + 32 * fi + c_row, wn + 32 * fj + c_col
                inside = (rows < m) & (cols < n)
                rows, cols = rows[inside], cols[inside]
                assert np.isnan(out[rows, cols]).all(), "two lanes write one element"
                assert len(set(zip(rows.tolist(), cols.tolist()))) == len(rows)
                out[rows, cols] = act(alpha * regs[inside] + bias[cols] + res[rows, cols])
    return out


def test_layout_expressions_invert_the_isa_placement():
    for dtype, ins in mfma.INSTRUCTIONS.items():
        kl = ins.per_lane
        for lane in range(64):
            for j in range(kl):
                i, kk = expr("a_row", lane=lane), expr("a_k", lane=lane, j=j, KL=kl)
                assert isa_a(i, kk, kl) == (lane, j), dtype
                col, kk = expr("b_col", lane=lane), expr("b_k", lane=lane, j=j, KL=kl)
                assert isa_b(kk, col, kl) == (lane, j), dtype
            for r in range(16):
                assert isa_d(expr("c_row", lane=lane, r=r), expr("c_col", lane=lane)) == (lane, r)


@pytest.mark.parametrize("config", mfma.CONFIGS, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", sorted(mfma.INSTRUCTIONS))
def test_block_tiles_compute_the_gemm(config, dtype):
    """Sizes that fill no tile evenly (edges in M, N and K), two blocks along each of M and N for
    the small tile, the whole epilogue."""
    rng = np.random.default_rng(0)
    tm, tn = config.tile
    m, n, k = tm + 7, tn // 2 + 13, 45
    a, b = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    bias, res = rng.standard_normal(n), rng.standard_normal((m, n))
    got = emulate(config, dtype, a, b, bias, res, 0.5, lambda v: np.maximum(v, 0.0))
    want = np.maximum(0.5 * a @ b.T + bias + res, 0.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_every_configuration_fits_the_lds_of_mi250():
    from ait_build.pipeline import find_target
    lds = find_target("mi250").fact("smem_per_block")
    assert lds == 64 * 1024
    for config in mfma.CONFIGS:
        for dtype in mfma.INSTRUCTIONS:
            assert mfma.lds_bytes(config, dtype) <= lds


# -- the implicit GEMM's gather, compiled from the rendered conv part on the host ----------------
HOST_DRIVER = r"""
#include <cstdint>
#include <cstdio>
#define __device__
#define __forceinline__ inline
using Raw = float;
%s
int main() {
  int N, H, W, C, HO, WO, KH, KW, SH, SW, PH, PW, DH, DW;
  if (std::scanf("%%d %%d %%d %%d %%d %%d %%d %%d %%d %%d %%d %%d %%d %%d", &N, &H, &W, &C, &HO, &WO,
                 &KH, &KW, &SH, &SW, &PH, &PW, &DH, &DW) != 14) return 1;
  const int64_t xs = static_cast<int64_t>(N) * H * W * C;
  float* x = new float[xs];
  for (int64_t i = 0; i < xs; ++i) x[i] = static_cast<float>(i + 1);  // element i reads as i + 1
  const Window g{H, W, C, HO, WO, KW, SH, SW, PH, PW, DH, DW};
  const int64_t M = static_cast<int64_t>(N) * HO * WO, K = static_cast<int64_t>(KH) * KW * C;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) std::printf("%%d\n", static_cast<int>(im2col(x, g, m, k)));
  return 0;
}
"""


def rendered_im2col(tmp_path) -> str:
    from ait_build.pipeline import build_plan, emit
    from ait_build.pipeline import find_target
    spec = os.path.join(ROOT, "specs", "tiny_cnn.yaml")
    target = find_target("mi250")
    skip_without_hipcc()  # emit records the compiler's version in the manifest
    emit(spec, target, str(tmp_path))
    parts = [k for k in build_plan(spec, target).unique_kernels() if k.template == "rocm/conv2d_mfma.cu.j2"]
    assert parts, "tiny_cnn has an implicit-GEMM conv"
    text = (tmp_path / parts[0].source).read_text()
    found = re.search(r"struct Window \{.*?\n\};\n", text, re.S)
    gather = re.search(r"__device__ __forceinline__ Raw im2col\(.*?\n\}\n", text, re.S)
    return found.group(0) + gather.group(0)


@pytest.mark.parametrize("geometry", [
    # N, H, W, C, O, KH, KW, SH, SW, PH, PW, DH, DW
    (2, 7, 6, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1),
    (1, 9, 8, 2, 3, 3, 2, 2, 3, 1, 0, 1, 1),
    (1, 8, 8, 3, 2, 3, 3, 1, 2, 2, 1, 2, 1),
])
def test_conv_gather_is_the_convolution(tmp_path, geometry):
    n, h, w, c, o, kh, kw, sh, sw, ph, pw, dh, dw = geometry
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    source = tmp_path / "gather.cpp"
    source.write_text(HOST_DRIVER % rendered_im2col(tmp_path / "emit"))
    binary = tmp_path / "gather"
    subprocess.run(["g++", "-O1", "-std=c++17", str(source), "-o", str(binary)], check=True)
    args = f"{n} {h} {w} {c} {ho} {wo} {kh} {kw} {sh} {sw} {ph} {pw} {dh} {dw}"
    out = subprocess.run([str(binary)], input=args, capture_output=True, text=True, check=True)
    cols = np.array(out.stdout.split(), dtype=np.int64).reshape(n * ho * wo, kh * kw * c)
    # the same matrix from NumPy: x[n, h, w, c] = flat index + 1, zero padding
    x = (np.arange(n * h * w * c) + 1).reshape(n, h, w, c)
    xp = np.pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))
    want = np.zeros((n, ho, wo, kh, kw, c), dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            want[:, :, :, i, j, :] = xp[:, i * dh:i * dh + sh * (ho - 1) + 1:sh,
                                        j * dw:j * dw + sw * (wo - 1) + 1:sw, :]
    np.testing.assert_array_equal(cols, want.reshape(n * ho * wo, kh * kw * c))
    # and with filters KRSC [O, KH*KW*C] the GEMM is the convolution
    rng = np.random.default_rng(1)
    filt = rng.standard_normal((o, kh, kw, c))
    conv = np.einsum("nhwijc,oijc->nhwo", want.astype(float), filt)
    np.testing.assert_allclose(cols @ filt.reshape(o, -1).T, conv.reshape(-1, o))
