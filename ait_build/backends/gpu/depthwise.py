"""GPU lowering of depthwise conv2d (groups = input channels = output channels), shared by the
GPU backends: templates/gpu/depthwise_conv2d.cu.j2, a kernel built for memory bandwidth (a block
stages its output tile's input window in shared memory with coalesced loads, then each thread
computes a strip of outputs from there), with the node's epilogue (bias, same-shaped residual,
activation) fused. Weights are float32 [KH][KW][C] (`<weight>@hwc`): the kernel computes in
float32 (converting each input when it stages it, or with `raw_window` when it reads it), so
its weights need no conversion.

Where the target has `async_copy` (cp.async: sm80+), the window stays in the input's type in
shared memory, copied without passing through registers (`raw_window`): half the shared memory
of a float32 window for 16-bit inputs, no registers for loads in flight, so more blocks stay
resident; each read is converted instead. On the H200 it was faster than the float32 window on
each of the 16 ImageNet convs timed (bench/results/h200/depthwise_raw/).

How the tile is chosen (`plan_tile`), in three steps:
- channels per thread (`vec`): 4 (one 16-byte float32 vector of shared memory) where C allows,
  2 for windows of 5x5 and more at stride 2 staged raw (`thread_channels`: fewer registers),
  else 1;
- channel slices per block (`slice`) to choose from: the divisors of C whose pixels are 64-128
  contiguous bytes in global memory, whole 32-byte sectors (32, 48 or 64 channels in 16-bit
  types, 16, 24 or 32 in float32), else 64-byte slices with the last one partial; and C itself
  where a whole pixel is at most 256 bytes;
- strip and tile: of every strip width PX (1-8 output pixels a thread), strips across the tile
  GW and tile rows TH whose block has at most 256 threads, whose staged window and weights fit
  44 KB of static shared memory, and which leave at least 16 warps resident per multiprocessor
  (by shared memory and an estimate of registers), the one with the fewest estimated
  multiprocessor cycles per output element: the larger of the issue time (staging the window,
  halo included; the FMAs and shared-memory loads of every lane of every tile, idle lanes and
  outputs past the image costing as much as real ones; the epilogue; a fixed cost per lane) and
  the memory time (input and output once at the multiprocessor's share of HBM, slowed where the
  resident blocks' staged bytes in flight are too few to keep it busy).
`bench/gpu_families.py` times the planned tile beside the estimate's next candidates
(`candidates`) on the H200.

Where a global average pool reads the conv's output (squeeze-excitation's squeeze), each block
also writes its tile's float32 sums per channel, and the pool only adds an image's tiles
(`pool_reader`; squeeze_excitation.py): the output is not read a second time.

The epilogue's silu, sigmoid, hardswish and hardsigmoid take the template's fast-math forms
(`FAST_ACTS`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.op_geometry import conv_geometry, conv_kernel_params
from ait_build.ir.dims import Dim

MAX_THREADS = 256
SHARED_BYTES = 44 * 1024  # window + weights of one block (static shared memory: at most 48 KB)
SM_SHARED_BYTES = 227 * 1024  # shared memory of one multiprocessor (sm90)
MIN_RESIDENT_WARPS = 16
ISSUE_PER_CYCLE = 128  # thread instructions a multiprocessor issues a cycle
BYTES_PER_CYCLE = 16.5  # a multiprocessor's share of HBM a cycle (H200: 4.3 TB/s, 132 x 1.98 GHz)
IN_FLIGHT_BYTES = 32 * 1024  # loads in flight a multiprocessor needs to keep that share busy
UNKNOWN_SIZE = 64  # output height/width assumed where the spec leaves it to run time
# epilogue activations the template has in forms with fast division and exponential
FAST_ACTS = {f"ait::{a}": f"fast_{a}" for a in ("silu", "sigmoid", "hardswish", "hardsigmoid")}


@dataclass(frozen=True)
class Tile:
    slice: int  # channels per block
    vec: int  # channels per thread
    px: int  # output pixels per thread along W
    gw: int  # strips across the tile's width
    th: int  # output rows of the tile (one per thread row)
    gvec: int  # elements per global access where the pointers allow
    raw_window: bool = False  # the window staged in the input's type (cp.async), not float32

    @property
    def threads(self) -> int:
        return self.slice // self.vec * self.gw * self.th


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def channel_slices(channels: int, vec: int, itemsize: int) -> list:
    """Slices whose pixels are 64-128 contiguous bytes of whole sectors dividing C, else 64-byte
    slices with the last one partial; and the whole pixel, up to 256 bytes."""
    out = [d for d in range(vec, channels + 1, vec) if channels % d == 0
           and 64 <= d * itemsize <= 128 and d * itemsize % 32 == 0]
    if not out and channels * itemsize > 64:
        out.append(max(vec, 64 // itemsize // vec * vec))
    if channels * itemsize <= 256:
        out.append(channels)
    return sorted(set(out))


def global_vector(channels: int, slice_: int, itemsize: int) -> int:
    g = 16 // itemsize
    while channels % g or slice_ % g:
        g //= 2
    return g


def registers(tile: Tile, win: dict, itemsize: int, loads: int) -> int:
    """Registers a thread of the tile needs, as ptxas gave them for sm_90a (within ~8 on the
    ImageNet convs): its accumulators, a kernel row of weights and the columns a strip reads
    (more at stride 2); with a float32 window also the staged loads in flight (up to 16 a
    thread, `loads`), which rule at stride 2."""
    compute = 20 + (tile.px + win["kw"]) * tile.vec + (8 if win["sw"] > 1 else 0)
    if tile.raw_window:
        return compute
    batch = min(16, loads)
    return max(compute + 8, 32 + batch * (tile.gvec * itemsize // 4 + 1))


def candidates(itemsize: int, channels: int, ho: int, wo: int, win: dict,
               raw_windows: bool = False, pooled: bool = False, vecs: tuple = (4,)) -> list:
    """(estimated multiprocessor cycles per output element, Tile) of every tile that fits, best
    first; with `raw_windows` (the target's async_copy) tiles staging their window in the
    input's type, else in float32 (on the H200 the first were faster on each of 16 ImageNet
    convs, 5-45%: docs/cuda.md); `pooled`: the window's shared memory must hold the tile's
    float32 sums; `vecs`: the channels a thread may take (those dividing C; 1 where none does)."""
    return sorted((e for vec in [v for v in vecs if channels % v == 0] or [1]
                   for e in _candidates(itemsize, channels, ho, wo, win, raw_windows, pooled,
                                        vec)), key=lambda e: (e[0], -e[1].threads))


def _candidates(itemsize, channels, ho, wo, win, raw_windows, pooled, vec) -> list:
    kh, kw, sh, sw, dh, dw = (win[k] for k in ("kh", "kw", "sh", "sw", "dh", "dw"))
    # input and output once: the halo's rows and columns come again from L2
    moved = (ho * sh * wo * sw + ho * wo) * channels * itemsize
    out = []
    staged = itemsize if raw_windows else 4  # bytes of a staged element
    # issuing one staged element: a copy holding no registers, or a load, conversion and store
    stage = 0.5 if raw_windows else (1.5 if itemsize == 2 else 0.75)
    for cs in channel_slices(channels, vec, itemsize):
        gvec = global_vector(channels, cs, itemsize)
        for px in range(1, 9):
            xw = (px - 1) * sw + (kw - 1) * dw + 1
            per_output = kh * kw * vec + kh * (xw + kw) / px + 8 * vec
            if raw_windows and itemsize != 4:
                per_output += kh * xw * vec / px  # each read converted
            for gw in range(1, _cdiv(wo, px) + 1):
                for th in range(1, ho + 1):
                    tile = Tile(cs, vec, px, gw, th, gvec, raw_windows)
                    threads = tile.threads
                    rows = (th - 1) * sh + (kh - 1) * dh + 1
                    cols = (gw * px - 1) * sw + (kw - 1) * dw + 1
                    shared = rows * cols * cs * staged + kh * kw * cs * 4
                    if threads > MAX_THREADS or shared > SHARED_BYTES:
                        break
                    if pooled and rows * cols * staged < th * gw * 4:
                        continue
                    lanes = _cdiv(threads, 32) * 32
                    loads = _cdiv(rows * cols * cs // gvec, threads)
                    regs = _cdiv(registers(tile, win, itemsize, loads), 8) * 8
                    resident = min(32, SM_SHARED_BYTES // shared, 65536 // (regs * lanes))
                    if resident * lanes // 32 < MIN_RESIDENT_WARPS:
                        continue
                    tiles = _cdiv(ho, th) * _cdiv(wo, gw * px) * _cdiv(channels, cs)
                    issue = tiles * (rows * cols * cs * stage + kh * kw * cs / 2
                                     + lanes * (px * per_output + 100)) / ISSUE_PER_CYCLE
                    # blocks load about half their time: the window's bytes in flight
                    in_flight = resident * rows * cols * cs * itemsize / 2
                    memory = moved / BYTES_PER_CYCLE / min(1.0, in_flight / IN_FLIGHT_BYTES)
                    cycles = max(issue, memory) + issue / 20  # fewer instructions break ties
                    out.append((cycles / (ho * wo * channels), tile))
    return out


def _size(d) -> int:
    d = Dim.of(d)
    return d.value if d.is_static else UNKNOWN_SIZE


def thread_channels(win: dict, raw_windows: bool) -> tuple:
    """The channels a thread may take: 4, or 2 for windows of 5x5 and more at stride 2 staged in
    the input's type, whose strips hold the most registers (a 4-channel thread of a 5x5/2 strip
    of 7 outputs: 80-90, so 25-30% occupancy); there 2-channel tiles were 15-16% faster on an
    H100 (the 56x56x144 and 14x14x672 convs), where at stride 1 and at 3x3/2 they lost as often as
    they won (bench/results/h100/depthwise_vec2/). Float32 windows were not measured."""
    wide = max(win["sh"], win["sw"]) > 1 and win["kh"] * win["kw"] >= 25
    return (2,) if wide and raw_windows else (4,)


def plan_tile(itemsize: int, channels: int, ho, wo, win: dict, raw_windows: bool = False,
              pooled: bool = False) -> Tile:
    found = candidates(itemsize, channels, _size(ho), _size(wo), win, raw_windows, pooled,
                       thread_channels(win, raw_windows))
    if not found:
        raise ValueError(f"depthwise conv: no tile of {channels} channels fits a {win} window")
    return found[0][1]


def pool_reader(lw, epi, ho, wo):
    """The global average pool reading the node's output, where the conv's kernel can sum its
    tiles for it: the output final when the kernel stores it (no residual added later) and its
    size static (the tiles an image has)."""
    if epi.later is not None or not (Dim.of(ho).is_static and Dim.of(wo).is_static):
        return None
    out = lw.node.output
    return next((n for n in lw.plan.readers(out)
                 if n.op == "global_avg_pool" and n.inputs[0] == out), None)


def lower(lw, epi, label: str) -> None:
    """One depthwise conv node with its epilogue (gemm.Epilogue) and kernel label."""
    node = lw.node
    dims, _, win, sizes, size_params = conv_geometry(lw)
    n, _, _, c, ho, wo, _ = dims
    kh, kw, cv = win["kh"], win["kw"], c.value
    dtype, ctype = lw.dtype(node.output), lw.ctype(node.output)
    weights = lw.weight("weight", lambda a: a.transpose(2, 3, 1, 0).reshape(kh, kw, cv), "hwc",
                        (kh, kw, cv))
    params = conv_kernel_params(ctype, "float", size_params)
    itemsize = 4 if dtype == "float32" else 2
    pool = pool_reader(lw, epi, ho, wo)
    tile = plan_tile(itemsize, cv, ho, wo, win, lw.plan.target.cap("async_copy"),
                     pool is not None)
    args = [lw.dst(node.output), lw.src(node.inputs[0]), weights] + epi.args(lw) + sizes
    if pool is not None:
        tiles = _cdiv(Dim.of(ho).value, tile.th) * _cdiv(Dim.of(wo).value, tile.gw * tile.px)
        sums = f"{pool.name}:tile_sums"
        params.append(("float*", "tile_sums"))
        args.append(lw.plan.add_slot(sums, "float", (n, tiles, c)).var)
        lw.plan.handed_on[pool.name] = (sums, tiles)
    context = dict(ctype=ctype, act_fn=FAST_ACTS.get(epi.fn, epi.fn), channels=cv,
                   pooled=pool is not None, **asdict(tile), **win)
    kernel = make_kernel(label, "conv2d", lw.template("depthwise_conv2d"), context, params)
    lw.call(kernel, args)
    epi.finish(lw, node.output)
