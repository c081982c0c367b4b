"""Winograd convolution for the cpu backend's 3x3 stride-1 convs: F(m x m, 3 x 3) computes an
m x m output tile from an (m+2) x (m+2) input tile with (m+2)^2 multiplies per channel pair
instead of 9 m^2. The kernel (templates/cpu/conv2d_winograd.cpp.j2) transforms input tiles
(B^T d B), multiplies them by the weights transformed here at build time (G g G^T) as (m+2)^2
GEMMs through the target's sgemm, and transforms the products back (A^T M A) with the fused
epilogue. The transforms are written out as straight-line C expressions from the matrices below,
so the compiler sees no multiplies by zero or one.

Which convs take it, and which tile, is `winograd_tile` below (docs/codegen.md).
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np

# The transforms of Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (2015), for
# the interpolation points 0, +-1 (m = 2) and 0, +-1, +-2 (m = 4), each with the point at infinity.
# tile m -> (B^T: alpha x alpha, G: alpha x 3, A^T: m x alpha), alpha = m + 2
TRANSFORMS = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [F(1, 2), F(1, 2), F(1, 2)], [F(1, 2), F(-1, 2), F(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
         [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[F(1, 4), 0, 0], [F(-1, 6), F(-1, 6), F(-1, 6)], [F(-1, 6), F(1, 6), F(-1, 6)],
         [F(1, 24), F(1, 12), F(1, 6)], [F(1, 24), F(-1, 12), F(1, 6)], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}

# the most floats one thread's tile chunk holds, input and product transforms together (about
# 1.5 MiB, within the per-core L2): as ait_cpu.h's kWinogradFloats
WINOGRAD_FLOATS = 393216

# The rule, from per-layer minimums of ResNet-50 (figures in docs/codegen.md, "conv2d: which
# algorithm"): F(4x4, 3x3) does 2.25x fewer multiplies than F(2x2, 3x3) but its 36 GEMMs get a
# quarter of the rows, so it pays only with enough tiles per image (the 56x56 and 28x28 layers;
# on 14x14 the two are alike and F(2x2), the more exact, is kept); F(2x2) beats im2col down to
# 16 tiles (the 7x7 layers). F(4x4)'s transforms (entries up to 8 and 1/24) cost digits: ~3e-6
# of the output's magnitude against F(2x2)'s 3e-7 (im2col: 4-8e-7), within the tests' 2e-5.
F4_MIN_TILES = 49  # F(4x4) tiles per image
F2_MIN_TILES = 16  # F(2x2) tiles per image
# C and O: measured down to 16 (SqueezeNet's 16 -> 64 expand convs at 55x55: 0.42 -> 0.24 ms by
# F(4x4) at one thread, GoogLeNet's 16 -> 32 and 24 -> 64 ones 1.5-2.4x faster); fewer not
# measured, so they keep im2col
MIN_CHANNELS = 16


def tile_count(ho: int, wo: int, tile: int) -> int:
    return -(-ho // tile) * -(-wo // tile)


def tile_for(win: dict, ho, wo) -> int:
    """F(m x m, 3 x 3)'s output tile m for a conv of this window and output size, or 0: only 3x3,
    stride-1, undilated windows over fixed spatial sizes qualify, m by the tiles an image has."""
    shape = (win["kh"], win["kw"], win["sh"], win["sw"], win["dh"], win["dw"])
    if shape != (3, 3, 1, 1, 1, 1) or not (ho.is_static and wo.is_static):
        return 0
    if tile_count(ho.value, wo.value, 4) >= F4_MIN_TILES:
        return 4
    return 2 if tile_count(ho.value, wo.value, 2) >= F2_MIN_TILES else 0


def winograd_tile(win: dict, groups: int, c: int, o: int, ho, wo) -> int:
    """The conv2d lowering's choice for an ungrouped conv: the output tile m of F(m x m, 3 x 3),
    or 0 for im2col + GEMM."""
    return tile_for(win, ho, wo) if groups == 1 and min(c, o) >= MIN_CHANNELS else 0


# Calls with few tiles (small images or batches) keep every tile's transformed inputs and
# products in the shared scratch, up to this many floats (4 MiB for F(2x2), 2 MiB for F(4x4)),
# so that the tile GEMMs run at full size, split by position. Beyond, parts of tiles or
# channels each take their tiles a chunk at a time in their own scratch: thin GEMMs of a few
# tiles' rows are where the BLAS is slowest. F(4x4)'s smaller limit keeps the 56x56 layers (196
# tiles, no faster shared) in parts and lets the 28x28 layers' 49 through (docs/codegen.md).
SHARED_FLOATS = {2: 1048576, 4: 524288}


def shared_tiles(max_tiles: int, c: int, o: int, tile: int) -> int:
    """The most tiles of a call the kernel takes through the shared-scratch path."""
    return min(max_tiles, SHARED_FLOATS[tile] // ((tile + 2) ** 2 * (c + o)))


def tile_chunk(tiles: int, c: int, o: int, tile: int) -> int:
    """Tiles a thread transforms and multiplies at once, as ait::winograd_chunk chooses it."""
    p = (tile + 2) ** 2
    return min(tiles, max(16, WINOGRAD_FLOATS // (p * (c + o))))


def thread_scratch_floats(tiles: int, c: int, o: int, tile: int) -> int:
    """One thread's scratch: the chunk's transformed inputs and products, a row of zeros (the
    padding's taps) and a row the output transform writes the tile's clipped pixels to."""
    return (tile + 2) ** 2 * tile_chunk(tiles, c, o, tile) * (c + o) + c + o


def transform_weights(w: np.ndarray, tile: int) -> np.ndarray:
    """[O, C, 3, 3] -> U[(m+2)^2][C][O], U[i*alpha + j] = (G g G^T)[i][j], in float64 then rounded
    once to float32. Summed term by term in a fixed order with elementwise NumPy operations (no
    BLAS or einsum, whose summation order may depend on the machine), so the weights file is
    byte-reproducible."""
    g = [[float(v) for v in row] for row in TRANSFORMS[tile][1]]
    w64 = w.astype(np.float64)
    alpha = tile + 2
    out = np.empty((alpha * alpha, w.shape[1], w.shape[0]), dtype=np.float32)
    for i in range(alpha):
        for j in range(alpha):
            acc = np.zeros(w.shape[:2], dtype=np.float64)
            for k in range(3):
                for l in range(3):
                    if g[i][k] and g[j][l]:
                        acc += (g[i][k] * g[j][l]) * w64[:, :, k, l]
            out[i * alpha + j] = acc.T
    return out


def _dot(row, names) -> str:
    """sum(row[k] * names[k]) as a C expression, skipping zeros and multiplies by +-1."""
    terms = []
    for coef, name in zip(row, names):
        if coef == 0:
            continue
        mag = abs(coef)
        term = name if mag == 1 else f"{float(mag)!r}f * {name}"
        terms.append(("-" if coef < 0 else "+", term))
    first_sign, first = terms[0]
    text = ("-" if first_sign == "-" else "") + first
    return text + "".join(f" {s} {t}" for s, t in terms[1:])


def _two_sided(mat, src: str, tmp: str, dst: str, cols: int) -> list:
    """C statements for dst = mat * X * mat^T with X the cols x cols scalars `src<i>_<j>`:
    first tmp = mat * X (one column at a time), then dst = tmp * mat^T."""
    rows = len(mat)
    out = []
    for i in range(rows):
        for j in range(cols):
            out.append(f"const float {tmp}{i}_{j} = "
                       + _dot(mat[i], [f"{src}{k}_{j}" for k in range(cols)]) + ";")
    for i in range(rows):
        for j in range(rows):
            out.append(f"const float {dst}{i}_{j} = "
                       + _dot(mat[j], [f"{tmp}{i}_{k}" for k in range(cols)]) + ";")
    return out


def transform_code(tile: int) -> dict:
    """The kernel's straight-line transforms: `input_transform` reads d<i>_<j> and defines
    v<i>_<j> (B^T d B); `output_transform` reads m<i>_<j> and defines y<i>_<j> (A^T M A)."""
    bt, _, at = TRANSFORMS[tile]
    alpha = tile + 2
    return dict(input_transform=tuple(_two_sided(bt, "d", "s", "v", alpha)),
                output_transform=tuple(_two_sided(at, "m", "t", "y", alpha)))


def lower(lw, epi, label: str, common: list, sizes: list, size_params: list, win: dict,
          dims: tuple, tile: int, flops) -> None:
    """The call of F(tile x tile, 3 x 3) for a conv2d node `winograd_tile` chose it for; `epi`
    is its gemm.Epilogue, `common` the out and x pointers, `dims` the (N, C, HO, WO, O) Dims,
    `flops` the direct convolution's count (for reports); the caller finishes the epilogue."""
    from ait_build.codegen.kernel import make_kernel
    n, c, ho, wo, o = dims
    wt = lw.weight("weight", lambda a: transform_weights(a, tile), f"winograd{tile}",
                   ((tile + 2) ** 2, c.value, o.value))
    bias = lw.weight("bias") if epi.has_bias else None
    tiles = lw.at_max(n) * tile_count(ho.value, wo.value, tile)
    shared = shared_tiles(tiles, c.value, o.value, tile)
    context = dict(epi.context(), **transform_code(tile), tile=tile, ph=win["ph"], pw=win["pw"],
                   shared_tiles=shared)
    params = [("float*", "out"), ("const float*", "x"), ("const float*", "w")] + epi.params()
    kernel = make_kernel(label, "conv2d", "cpu/conv2d_winograd.cpp.j2", context,
                         params + size_params)
    lw.call(kernel, common + [wt] + epi.args(lw, bias) + sizes,
            scratch_shared=((tile + 2) ** 2 * shared * (c.value + o.value) + c.value) * 4,
            scratch_thread=thread_scratch_floats(tiles, c.value, o.value, tile) * 4, flops=flops)
