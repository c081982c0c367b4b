"""The cuda backend's matrix engine: CUTLASS kernels for GEMMs and implicit-GEMM convs.

GEMMs and convolutions run through CUTLASS 2.x sm80 tensor-op kernels (they run unchanged on
sm_90a) with the epilogue act(acc + bias + residual) fused by CUTLASS's broadcast epilogue:
LinearCombinationBiasElementwise computes act(alpha * acc + beta * C + V) with C the residual
(beta = 1, or 0 and never read) and V the per-column bias (a null pointer reads as zeros), so
one kernel serves every bias/residual combination and a kernel's identity is only its element
type, operand alignments and activation (and its accumulator, below). Which configurations
(tiles, stages, schedules) a call may run is configs.py; the lowering around them is the GPU
layer's (backends/gpu/gemm.py).

A target picks the GEMM family with `kernels: {gemm: ..., conv2d: ...}`. `cutlass_sm90` adds
CUTLASS 3.x warp-specialized TMA kernels with the same epilogue as an epilogue visitor tree to
the 16-bit GEMMs whose K and N are multiples of 8 (gemm_sm90.cu.j2; calls too small to fill
the device keep the sm80 configurations) and, for a profile to pick, sm90 convs (docs/cuda.md).

The CUTLASS kernels accumulate in float32 unless the target asks for `precision: {accumulate:
float16}`: then those of float16 models accumulate in half_t (the epilogue still computes in
float32); bfloat16 and float32 models and the GPU layer's own templates keep float32.
"""

from __future__ import annotations

from ait_build.backends.cuda.configs import conv_candidates, gemm_candidates
from ait_build.backends.cuda.estimate import Device, ranked
from ait_build.backends.gpu.gemm import MatrixEngine

# kernel family (target.kernels) -> whether its calls may also run CUTLASS 3.x Hopper kernels
# (configs.py lists the configurations of both)
FAMILIES = {"cutlass_sm80": False, "cutlass_sm90": True}
DEFAULT_FAMILY = "cutlass_sm80"
ELEMENT = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t", "float32": "float"}
ACCUMULATOR = {"float16": "cutlass::half_t", "float32": "float"}
PARTS = {
    "gemm": {"sm80": "cuda/gemm_sm80.cu.j2", "sm90": "cuda/gemm_sm90.cu.j2"},
    "conv2d": {"sm80": "cuda/conv2d_sm80.cu.j2", "sm90": "cuda/conv2d_sm90.cu.j2"},
}


def tensor_op(dtype: str) -> dict:
    """Instruction shape, math operator and the alignments (elements per access) CUTLASS's sm80
    tensor-op kernels take for `dtype`. float32 runs as 3xTF32 (OpMultiplyAddFastF32): tensor
    cores at close to float32 accuracy. The tile configurations are in configs.py."""
    if dtype == "float32":
        return dict(inst="16, 8, 8", math="cutlass::arch::OpMultiplyAddFastF32", aligns=(4, 2, 1))
    return dict(inst="16, 8, 16", math="cutlass::arch::OpMultiplyAdd", aligns=(8, 4, 2))


def accumulator(lw, dtype: str) -> dict:
    """The CUTLASS kernels' accumulator as context: {} for float32 (the templates' default, so
    the default kernels keep their names), {'accumulator': 'cutlass::half_t'} for a float16 model
    on a target with `precision: {accumulate: float16}` (target.accumulator). Own templates
    (gemm_simple, conv2d_direct) always accumulate in float32 and never get it."""
    acc = lw.plan.target.accumulator(dtype)
    return {} if acc == "float32" else {"accumulator": ACCUMULATOR[acc]}


def context(lw, dtype: str, epi, aligns: tuple) -> dict:
    """The context every CUTLASS GEMM/conv kernel of this call shares, whatever its tiles."""
    tc = tensor_op(dtype)
    return dict(element=ELEMENT[dtype], ctype=lw.plan.ctypes[dtype], act=epi.functor,
                act_fn=epi.fn, align_a=aligns[0], align_b=aligns[1], align_c=aligns[2],
                inst=tc["inst"], math=tc["math"], **accumulator(lw, dtype))


def hopper_family(target, op: str) -> bool:
    """Whether the target's family for `op` is Hopper's (checked when the target loaded:
    backends.check_target)."""
    return FAMILIES[target.kernel(op, DEFAULT_FAMILY)]


def candidates(lw, op: str, dtype: str, min_align: int, channels: int, out_channels: int = 0) -> tuple:
    """(candidates, ladder) of a GEMM or conv on the target's family."""
    hopper = hopper_family(lw.plan.target, op)
    if op == "gemm":
        return gemm_candidates(dtype, hopper, min_align, channels)
    return conv_candidates(dtype, hopper, min_align, channels, out_channels)


def estimate(lw, op: str, problem: tuple, configs: tuple):
    """extent -> the configuration estimate.py ranks first for the call, or None where there is
    nothing to rank (one candidate, sizes known only at run time, a target without the device
    facts the estimate reads). Configurations marked not `estimated` are not counted: `ranked`
    leaves them out, so only a profile picks them."""
    target = lw.plan.target
    if (sum(c.estimated for c in configs) < 2 or not all(isinstance(v, int) for _, v in problem)
            or any(target.fact(k) is None for k in ("sm_count", "peak_fp16_tflops", "hbm_tbps"))):
        return None
    device, sizes = Device.of(target, hopper_family(target, op)), dict(problem)
    return lambda extent: ranked(device, op, sizes, configs, extent)[0][1]


CUTLASS = MatrixEngine(name="CUTLASS", element=ELEMENT, aligns=lambda dtype: tensor_op(dtype)["aligns"],
                       context=context, candidates=candidates, parts=PARTS, estimate=estimate)
