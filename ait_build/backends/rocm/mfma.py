"""The rocm backend's matrix engine: GEMMs and implicit-GEMM convs on CDNA's matrix cores (MFMA),
tiled through LDS, with the epilogue act(alpha * acc + bias + residual) fused.

A block of `waves` 64-lane wavefronts computes a tile_m x tile_n tile of the output; each wave a
wave_m x wave_n part of it as (wave_m / 32) x (wave_n / 32) MFMA tiles of 32 x 32, accumulating in
float32 registers. Each step stages a tile_m x tile_k slice of A and a tile_n x tile_k slice of B
(both K-contiguous) in LDS, then runs tile_k / k MFMA instructions per MFMA tile. The operand
loaders are the only difference between a GEMM (rocm/gemm_mfma.cu.j2) and an implicit-GEMM conv
(rocm/conv2d_mfma.cu.j2); the mainloop and epilogue are rocm/_mfma.j2.

Where each lane's operands and results sit in an MFMA tile is the ISA's layout. The kernels index
with the C expressions of `LAYOUT` (rendered into _mfma.j2), and tests/backends/rocm/test_mfma_layout.py
runs the same expressions in a NumPy emulation of the whole block tile against the layout AMD
documents, checked against A @ B: no AMD GPU is available to this project, so that emulation,
and the hipcc tests' check that the code objects hold v_mfma instructions, are what verifies them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.backends.gpu.gemm import MatrixEngine
from ait_build.codegen.tuning import Config


@dataclass(frozen=True)
class Mfma:
    """One MFMA instruction (a single 32 x 32 block, float32 accumulators: 16 per lane)."""

    builtin: str  # clang's builtin for it
    k: int  # K of one instruction; each lane holds k / 2 of A's row and of B's column
    raw: str  # the device type of one operand element
    instruction: str  # its mnemonic in the code object (what the hipcc tests look for)

    @property
    def per_lane(self) -> int:
        return self.k // 2


# AMD "CDNA2 Instruction Set Architecture" (2022), section 7.1 (dependent MFMA instructions and
# their operand layouts), and AMD's matrix instruction calculator
# (github.com/ROCm/amd_matrix_instruction_calculator) for v_mfma_f32_32x32x8f16 and
# v_mfma_f32_32x32x2f32 on CDNA2
INSTRUCTIONS = {
    "float16": Mfma("__builtin_amdgcn_mfma_f32_32x32x8f16", 8, "_Float16", "v_mfma_f32_32x32x8f16"),
    "float32": Mfma("__builtin_amdgcn_mfma_f32_32x32x2f32", 2, "float", "v_mfma_f32_32x32x2f32"),
}

# Lane `lane` of a wave holds A[A_ROW][A_K] and B[B_K][B_COL] for j < k / 2 (KL), and result
# register r < 16 of it is D[C_ROW][C_COL]: C expressions over ints (`/` truncates); the
# emulation evaluates them with Python's // (all operands are non-negative)
LAYOUT = {
    "a_row": "lane % 32",
    "a_k": "(lane / 32) * KL + j",
    "b_col": "lane % 32",
    "b_k": "(lane / 32) * KL + j",
    "c_row": "8 * (r / 4) + 4 * (lane / 32) + r % 4",
    "c_col": "lane % 32",
}

# the storage and element types the templates name (HIP's __half is binary-compatible with
# clang's _Float16, which the MFMA builtins take)
ELEMENT = {"float16": "__half", "float32": "float"}
ALIGNS = (1,)  # operands are staged one element at a time: any row length works, and kernels
# do not split by alignment
PAD = 4  # elements of padding per LDS row (tile_k + PAD): rows start in different banks


def config(tile_m: int, tile_n: int, wave_m: int, wave_n: int, tile_k: int = 32) -> Config:
    waves = (tile_m // wave_m) * (tile_n // wave_n)
    context = (("tile_k", tile_k), ("tile_m", tile_m), ("tile_n", tile_n), ("wave_m", wave_m),
               ("wave_n", wave_n), ("waves", waves))
    return Config(f"mfma_{tile_m}x{tile_n}x{tile_k}_w{wave_m}x{wave_n}", "mfma", context,
                  (tile_m, tile_n))


# largest first: the heuristic's ladder takes the first whose tiles cover every compute unit
CONFIGS = (config(128, 128, 64, 64), config(64, 64, 32, 32))


def lds_bytes(c: Config, dtype: str) -> int:
    """LDS one block of configuration `c` stages: the A and B slices, padded."""
    ctx = dict(c.context)
    element = 2 if dtype == "float16" else 4
    return (ctx["tile_m"] + ctx["tile_n"]) * (ctx["tile_k"] + PAD) * element


def context(lw, dtype: str, epi, aligns: tuple) -> dict:
    """What every MFMA kernel of a call shares, whatever its tiles: the instruction, its layout
    and the epilogue."""
    mfma = INSTRUCTIONS[dtype]
    return dict(element=ELEMENT[dtype], ctype=lw.plan.ctypes[dtype], act=epi.functor,
                act_fn=epi.fn, align_a=aligns[0], align_b=aligns[1], align_c=aligns[2],
                mfma=mfma.builtin, mfma_k=mfma.k, raw=mfma.raw, pad=PAD,
                **{f"layout_{k}": v for k, v in LAYOUT.items()})


def candidates(lw, op: str, dtype: str, min_align: int, channels: int, out_channels: int = 0) -> tuple:
    """(candidates, ladder): the configurations whose LDS fits the target's (device.smem_per_block,
    64 KiB on gfx90a), largest tile first."""
    lds = lw.plan.target.fact("smem_per_block", 65536)
    fits = tuple(c for c in CONFIGS if lds_bytes(c, dtype) <= lds)
    return fits, fits


FAMILIES = ("rocm_mfma",)
PARTS = {"gemm": {"mfma": "rocm/gemm_mfma.cu.j2"}, "conv2d": {"mfma": "rocm/conv2d_mfma.cu.j2"}}

MFMA = MatrixEngine(name="MFMA", element=ELEMENT, aligns=lambda dtype: ALIGNS, context=context,
                    candidates=candidates, parts=PARTS)
