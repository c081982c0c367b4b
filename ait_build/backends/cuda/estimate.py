"""The estimated time of a CUTLASS configuration on one GEMM or conv problem: a call without a
profile entry runs the candidate this estimate ranks first (docs/cuda.md, "The estimate").

The problem is seen as the GEMM it is (conv: rows = batch x output pixels, columns = output
channels, depth = filter taps x input channels) and the configuration as its block tile
(rows x columns x depth). The estimate in microseconds is

    LAUNCH + max(memory, mainloop) + OVERLAP_LOSS x min(memory, mainloop) (+ STREAMK_FIXUP)

- memory: the operands and the output moved once from or to HBM at the target's bandwidth;
- mainloop: the busiest multiprocessor runs ceil(tiles / sm_count) tiles one after the other
  (wave quantization), each a loop of depth steps. A step takes the longer of its multiply-adds
  (tile rows x columns x depth, padded: the tile waste in rows, columns and depth) at the
  multiprocessor's share of the peak and of loading its operand tiles ((rows + columns) x depth;
  TMA multicast in a cluster loads a shared tile once) at its share of FEED_RATIO x HBM
  bandwidth, both times the family's EFFICIENCY, plus STEP_NS of synchronization; a tile then
  writes its outputs and pays TILE_US (sm90 GEMMs); ping-pong overlaps that with the other warp
  group's mainloop, so its tile costs the longer of the two. A conv's depth steps are per
  filter tap over the input channels (CUTLASS's kOptimized iterator: 24 channels in a 32-deep
  step waste a quarter), or over the whole filter for the kFixedChannels iterator;
- stream-K spreads the depth steps of all tiles evenly over the multiprocessors (no wave
  quantization) and pays a fixed cost for its partial-sum fixup and workspace.

The constants are round figures chosen so the estimate ranks the measured winners of
profiles/h200.yaml and profiles/a100.yaml first or close (tests/backends/cuda/test_estimate.py
counts them); the estimate is a ranking, not a prediction of absolute times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ait_build.codegen.tuning import Config, gemm_rows

LAUNCH_US = 5.0  # a launch and its tail, in every configuration alike
# stream-K's workspace and partial-tile fixup (stream-K won none of the profiled GEMMs)
STREAMK_FIXUP_US = 8.0
# a depth step's synchronization, by kind: sm80's cp.async wait and block barrier, sm90's
# mbarrier handshake between the producer and consumer warps
STEP_NS = {"sm80": 30.0, "sm90": 20.0, "sm90_conv": 20.0}
# the part of the shorter of memory and mainloop that does not hide behind the longer
OVERLAP_LOSS = 0.5
# what an sm90 GEMM tile costs besides its steps and its output bytes (its epilogue's barriers
# and TMA store drain; persistent kernels pay it per tile): fitted to every candidate's time on
# the 1x1 convs of four mobile CNNs (bench/results/h100/estimate_small_k/), where one depth step a
# tile left the ping-pong 64- and 128-row tiles the estimate chose 1.5-2.5x slower than the
# largest cooperative or sm80 tiles; sm80 tiles and sm90 convs fit best without it
TILE_US = {"sm80": 0.0, "sm90": 0.3, "sm90_conv": 0.0}
FEED_RATIO = 4.0  # L2 feeds a multiprocessor's tiles at about 4x its share of HBM bandwidth
# fraction of the multiprocessor's peak a configuration's mainloop reaches, by configuration
# kind and whether the device is a Hopper (wgmma) one: mma.sync reaches about half of
# Hopper's wgmma peak; CUTLASS 4.2's sm90 conv is not persistent (a prologue per tile)
EFFICIENCY = {("sm80", False): 0.8, ("sm80", True): 0.5, ("sm90", True): 0.8,
              ("sm90_conv", True): 0.7}
REGISTERS = 65536  # 32-bit registers of a multiprocessor (sm80 and sm90 alike)
SMEM_PER_SM = 228 * 1024
# an sm80 conv whose input channels fit one depth step starts a filter tap every step (the
# kFixedChannels iterator several), and such steps are slow: a block's step takes about this
# long per filter tap and row its threads load, which only the other resident blocks hide
# (EfficientNet's 24-channel convs in profiles/h200.yaml: the 64x64 tile, 5 blocks a
# multiprocessor, 2.8x faster than the 128x128 one with 2)
TAP_STEP_US = 3.0
SM90_CONV_THREADS = 256  # the sm90 conv's two consumer warp groups
# the kFixedChannels iterator gathers each tap's few channels with narrow loads
FIXED_CHANNELS_EFFICIENCY = 0.3


@dataclass(frozen=True)
class Device:
    """What the estimate knows of a target's GPU (targets/*.yaml `device:`)."""

    sm_count: int
    peak_tflops: float  # dense fp16 tensor-core peak
    hbm_tbps: float
    hopper: bool  # wgmma kernels (the target's kernel family is cutlass_sm90)

    @classmethod
    def of(cls, target, hopper: bool) -> "Device":
        return cls(int(target.fact("sm_count")), float(target.fact("peak_fp16_tflops")),
                   float(target.fact("hbm_tbps")), hopper)


def _ints(text) -> tuple:
    return tuple(int(v) for v in str(text).split(","))


@dataclass(frozen=True)
class Shape:
    """A configuration's geometry as the estimate sees it."""

    rows: int
    cols: int
    depth: int
    kind: str  # EFFICIENCY's key
    multicast: tuple  # (cluster rows, cluster columns)
    streamk: bool = False
    fixed_channels: bool = False
    overlapped: bool = False  # ping-pong: a tile's epilogue overlaps the next one's mainloop
    resident: int = 1  # blocks a multiprocessor holds at once (sm80: by registers and shared memory)
    threads: int = 128


def shape_of(config: Config) -> Shape:
    ctx = dict(config.context)
    if config.kind == "sm80":
        rows, cols, depth = _ints(ctx["block"])
        warp = _ints(ctx["warp"])
        threads = 32 * (rows // warp[0]) * (cols // warp[1])
        # a thread's float32 accumulators and about 64 registers for fragments and addresses
        by_registers = REGISTERS // (threads * (rows * cols // threads + 64))
        by_smem = SMEM_PER_SM // (ctx["stages"] * (rows + cols) * depth * 2)
        return Shape(rows, cols, depth, "sm80", (1, 1),
                     fixed_channels=ctx.get("iterator") == "kFixedChannels",
                     resident=max(1, min(by_registers, by_smem)), threads=threads)
    rows, cols, depth = _ints(ctx["tile"])
    cluster = _ints(ctx["cluster"])[:2]
    if "schedule" not in ctx:  # an sm90 conv
        return Shape(rows, cols, depth, "sm90_conv", cluster, threads=SM90_CONV_THREADS)
    return Shape(rows, cols, depth, "sm90", cluster, streamk=ctx["splits"] == 0,
                 overlapped=ctx["schedule"] == "pingpong")


def gemm_view(kind: str, problem: dict, extent: int) -> tuple:
    """(rows, columns, batches, depth steps of a `depth`-deep tile as a function, bytes moved)."""
    if kind == "gemm":
        (m, batches), n, k = gemm_rows(problem, extent), problem["n"], problem["k"]
        return (m, n, batches, lambda depth, fixed: math.ceil(k / depth),
                2 * batches * (m * k + n * k + m * n))
    taps, c = problem["kh"] * problem["kw"], problem["c"]
    rows, o = extent * problem["ho"] * problem["wo"], problem["o"]

    def steps(depth, fixed):
        return math.ceil(taps * c / depth) if fixed else taps * math.ceil(c / depth)
    return rows, o, 1, steps, 2 * (extent * problem["h"] * problem["w"] * c + o * taps * c + rows * o)


def estimate_us(device: Device, kind: str, problem: dict, config: Config, extent: int) -> float:
    """Estimated microseconds of `config` on the problem at `extent` (module docstring)."""
    s = shape_of(config)
    rows, cols, batches, steps, moved = gemm_view(kind, problem, extent)
    efficiency = EFFICIENCY.get((s.kind, device.hopper), EFFICIENCY[("sm80", False)])
    if s.fixed_channels:
        efficiency *= FIXED_CHANNELS_EFFICIENCY
    sm_flops = efficiency * device.peak_tflops * 1e12 / device.sm_count
    sm_feed = efficiency * FEED_RATIO * device.hbm_tbps * 1e12 / device.sm_count
    step_flops = 2 * s.rows * s.cols * s.depth
    step_bytes = 2 * s.depth * (s.rows / s.multicast[1] + s.cols / s.multicast[0])
    step_s = max(step_flops / sm_flops, step_bytes / sm_feed) + STEP_NS[s.kind] * 1e-9
    # writing a tile's outputs, and what a tile costs besides its steps (TILE_US)
    epilogue_s = 2 * s.rows * s.cols / sm_feed + TILE_US[s.kind] * 1e-6
    tiles = math.ceil(rows / s.rows) * math.ceil(cols / s.cols) * batches
    tile_steps = steps(s.depth, s.fixed_channels)
    if kind == "conv2d" and problem["c"] <= s.depth:
        taps = s.depth // problem["c"] if s.fixed_channels else 1  # the filter taps of a step
        hidden_by = min(s.resident, math.ceil(tiles / device.sm_count))
        step_s = max(step_s, TAP_STEP_US * 1e-6 * taps * s.rows / s.threads / hidden_by)
    waves = math.ceil(tiles / device.sm_count)
    if s.streamk:
        mainloop = math.ceil(tiles * tile_steps / device.sm_count) * step_s + waves * epilogue_s
    else:
        tile_s = tile_steps * step_s
        if s.overlapped:
            # ping-pong: one warp group's epilogue runs while the other's tile is in its mainloop,
            # so a tile costs the longer of the two, not their sum (a short mainloop, few input
            # channels, hides little of it); the last epilogue shows
            mainloop = waves * max(tile_s, epilogue_s) + epilogue_s
        else:
            mainloop = waves * (tile_s + epilogue_s)
    memory = moved / (device.hbm_tbps * 1e12)
    overlapped = max(memory, mainloop) + OVERLAP_LOSS * min(memory, mainloop)
    return LAUNCH_US + 1e6 * overlapped + (STREAMK_FIXUP_US if s.streamk else 0.0)


def ranked(device: Device, kind: str, problem: dict, candidates, extent: int) -> list:
    """(estimate, config) of every candidate the estimate ranks (not those marked not
    `estimated`: only a profile picks them), fastest first (ties: the candidate listed first)."""
    candidates = [c for c in candidates if c.estimated]
    order = {c.name: i for i, c in enumerate(candidates)}
    return sorted(((estimate_us(device, kind, problem, c, extent), c) for c in candidates),
                  key=lambda pair: (pair[0], order[pair[1].name]))
