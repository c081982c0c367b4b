"""Other tiles of the depthwise kernel on the same convs (bench/gpu_families.py, unless
--no-variants): each conv's planned kernel re-rendered with the planned tile in the other
staging (a float32 window or one in the input's type, `raw_window`) and with the best tile of the
planner's own estimate (backends/gpu/depthwise.py: candidates) that differs from the planned one
in the staging, in the strip width, in the channel slice, in the block's size (at least 1.5
times more or fewer threads) and in the channels a thread takes (2 or 4: `VECS`; also the best
such tile with the planned strip and staging),
every one its own translation unit compiled with the target's nvcc line, linked with one C entry
per variant into a library, and timed from PyTorch with CUDA events. Whether the estimate ranks
the tiles as the GPU does; each variant's output is also compared with the planned kernel's
(`max_diff`: every tile sums each output's products in the same order, so it must be 0)."""

from __future__ import annotations

import ctypes
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace

from ait_build.backends.gpu.depthwise import candidates
from ait_build.codegen.emit import render_kernel
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.render import render

FAMILIES = ("efficientnet_b0", "convnext")  # MobileNetV3's convs have EfficientNet's shapes
VECS = (4, 2)  # channels a thread takes: the planner's 4, and 2 (fewer registers a thread)
TILE_KEYS = ("slice", "vec", "px", "gw", "th", "gvec", "raw_window")


def alternatives(planned, ranked: list) -> list:
    """The planned tile in the other staging, then the first tile of `ranked` (best first) with
    the other staging, another strip width, another slice, and a block at least 1.5 times larger
    or smaller than `planned`, without repeats."""
    tests = (lambda t: t.raw_window != planned.raw_window, lambda t: t.px != planned.px,
             lambda t: t.slice != planned.slice,
             lambda t: not 2 / 3 < t.threads / planned.threads < 1.5,
             lambda t: t.vec != planned.vec,
             lambda t: t.vec != planned.vec and t.px == planned.px
             and t.raw_window == planned.raw_window)
    twin = replace(planned, raw_window=not planned.raw_window)
    out = [twin] if twin in ranked else []
    for test in tests:
        tile = next((t for t in ranked if test(t) and t != planned and t not in out), None)
        if tile is not None:
            out.append(tile)
    return out


def variants(kernel, dtype: str, ho: int, wo: int) -> list:
    """The planned kernel and its re-renderings with alternatives() of its tile."""
    ctx = dict(kernel.context)
    itemsize = 2 if dtype in ("float16", "bfloat16") else 4
    both = (candidates(itemsize, ctx["channels"], ho, wo, ctx, raw_windows=raw, vecs=VECS)
            for raw in (False, True))
    ranked = [t for _, t in sorted((e for found in both for e in found),
                                   key=lambda e: (e[0], -e[1].threads))]
    planned = next(t for t in ranked if all(getattr(t, k) == ctx[k] for k in TILE_KEYS))
    out = [kernel]
    for tile in alternatives(planned, ranked):
        raw = "r" if tile.raw_window else ""
        name = f"{kernel.label}_s{tile.slice}v{tile.vec}p{tile.px}g{tile.gw}t{tile.th}{raw}"
        out.append(make_kernel(name,
                               kernel.op, kernel.template, dict(ctx, **asdict(tile)),
                               [tuple(p.rsplit(" ", 1)) for p in kernel.params.split(", ")]))
    return out


def build(kernels: list, backend, toolchain, folder: str) -> ctypes.CDLL:
    """One library with `extern "C" int v<i>(stream, sm_count, out, x, w, bias, res, N, H, W, C,
    HO, WO, O)` calling kernels[i]."""
    src = os.path.join(folder, "src")
    os.makedirs(src, exist_ok=True)
    for path, template in backend.support_files.items():
        with open(os.path.join(folder, path), "w") as fh:
            fh.write(render(template, {}))
    entries = ['#include "ait_cuda.h"', "namespace ait_kernels {"]
    entries += [f"int {k.name}(const ait::Ctx& cx, {k.params});" for k in kernels]
    entries += ["}", 'extern "C" {']
    for i, k in enumerate(kernels):
        entries.append(
            f'__attribute__((visibility("default"))) int v{i}(void* s, int sm, void* out, '
            "const void* x, const void* w, const void* b, const void* r, int64_t N, int64_t H, "
            "int64_t W, int64_t C, int64_t HO, int64_t WO, int64_t O) {\n"
            f"  using T = {dict(k.context)['ctype']};\n"
            "  const ait::Ctx cx{static_cast<cudaStream_t>(s), sm, nullptr, 0};\n"
            f"  return ait_kernels::{k.name}(cx, static_cast<T*>(out), static_cast<const T*>(x), "
            "static_cast<const float*>(w), static_cast<const T*>(b), static_cast<const T*>(r), "
            "N, H, W, C, HO, WO, O);\n}")
    entries.append("}")
    sources = {os.path.join(src, "entries.cu"): "\n".join(entries) + "\n"}
    sources.update({os.path.join(src, f"{k.name}.cu"): render_kernel(k, backend) for k in kernels})
    for path, text in sources.items():
        with open(path, "w") as fh:
            fh.write(text)
    objects = [p + ".o" for p in sources]
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(lambda p: subprocess.run(toolchain.compile_command(p, p + ".o"), check=True),
                      sources))
    lib = os.path.join(folder, "libvariants.so")
    subprocess.run(toolchain.link_command(objects, lib), check=True)
    return ctypes.CDLL(lib)


def time_ms(fn, runs: int) -> float:
    """The median of `runs` calls of fn between CUDA events, after one call."""
    import statistics

    import torch
    from ait_build.bench.cuda import event_times
    return statistics.median(event_times(torch, fn, 1, runs))


def out_size(size: int, k: int, s: int) -> int:
    """Output pixels along a side of `size` of a k x k conv at stride s padded by k // 2 (the
    benchmark's convs)."""
    return (size + 2 * (k // 2) - k) // s + 1


def sweep(plan, info: dict, backend, toolchain, folder: str, batch: int, runs: int) -> list:
    """Rows {node, slice, px, gw, th, threads, planned, ms} for the depthwise nodes of `plan` of
    FAMILIES (`info`: node -> (kind, model, input shape, kernel, stride))."""
    import torch
    steps = [s for s in plan.steps if s.node in info and info[s.node][1] in FAMILIES
             and s.kernel.label.startswith("depthwise")]
    dtype = plan.graph.dtype

    def sizes(step) -> tuple:
        _, h, w, _ = info[step.node][2]
        k, s = info[step.node][3], info[step.node][4]
        return out_size(h, k, s), out_size(w, k, s)
    per_node = [(s, variants(s.kernel, dtype, *sizes(s))) for s in steps]
    kernels = list({k.name: k for _, ks in per_node for k in ks}.values())
    lib = build(kernels, backend, toolchain, folder)
    index = {k.name: i for i, k in enumerate(kernels)}
    tdtype = getattr(torch, dtype)
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for step, ks in per_node:
        n, h, w, c = info[step.node][2]
        k, s = info[step.node][3], info[step.node][4]
        ho, wo = sizes(step)
        x = torch.randn(n, h, w, c, device="cuda", dtype=tdtype)
        weight = torch.randn(k, k, c, device="cuda", dtype=torch.float32)
        bias = torch.randn(c, device="cuda", dtype=tdtype)
        out = torch.empty(n, ho, wo, c, device="cuda", dtype=tdtype)
        first = None  # the planned kernel's output: every variant must give the same
        for kern in ks:
            fn = lib[f"v{index[kern.name]}"]
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int] + [ctypes.c_void_p] * 5 + \
                [ctypes.c_int64] * 7
            args = (stream, sm, out.data_ptr(), x.data_ptr(), weight.data_ptr(), bias.data_ptr(),
                    None, n, h, w, c, ho, wo, c)

            def call(fn=fn, args=args):
                if fn(*args):
                    raise RuntimeError(f"{kern.name} failed")
            ctx = dict(kern.context)
            out.zero_()
            call()
            torch.cuda.synchronize()
            if first is None:
                first = out.clone()
            diff = (out.float() - first.float()).abs().max().item()
            rows.append(dict(node=step.node,
                             **{k: ctx[k] for k in ("slice", "vec", "px", "gw", "th", "raw_window")},
                             threads=ctx["slice"] // ctx["vec"] * ctx["gw"] * ctx["th"],
                             planned=kern is ks[0], ms=time_ms(call, runs), max_diff=diff))
    return rows
