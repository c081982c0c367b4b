"""`ait-build bench` on cuda builds: CUDA-event latency of our library beside PyTorch on the same
GPU, in one process, on the same inputs and weights.

For each case our library runs with its CUDA graphs (the default: repeated calls on the same
buffers replay one graph) and without them (AIT_CUDA_GRAPHS=0, read when the model is created).
With `--vs torch`, the spec's PyTorch twin (ait_build/bench/models.py, the spec's weights and
dtype, on the GPU) runs eagerly, captured in one CUDA graph, and through torch.compile. Each call
is bracketed by CUDA events on the current stream (host-side launch gaps inside a call count, as
a user sees them); a side gives the median, p10 and p90 of `runs` timed calls after `warmup`
untimed ones. docs/benchmarks.md has the commands behind its figures.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import sys
import time

from ait_build.errors import AitError
from ait_build.runtime.inputs import make_inputs
from ait_build.runtime.model import numpy_to_torch
from ait_build.runtime.settings import model_with

# torch.compile modes; "none" leaves torch.compile out (it takes tens of seconds per case);
# "auto": reduce-overhead at batch 1 (its CUDA graphs are PyTorch's best there), default above
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", "auto",
                 "none")
# a case with more rows than this (the product of its dims: batch x seq) runs long calls: at
# most LARGE_RUNS timed calls after at most LARGE_WARMUP untimed ones
LARGE_ROWS, LARGE_RUNS, LARGE_WARMUP = 512, 30, 5
DEFAULT_RUNS, DEFAULT_WARMUP = 100, 20
CLOCK = "torch.cuda.Event"  # how a cuda build is timed (and which table prints its report)
# the PyTorch sides: report key, table heading
TORCH_MODES = (("torch_eager", "eager"), ("torch_eager_cuda_graph", "eager+graph"),
               ("torch_compile", "compile"))


def parse_case(text: str) -> tuple:
    """'model:batch' or 'model:batchxseq' (bench/cuda_profile.py's --cases) -> (model, dims)."""
    name, _, size = text.partition(":")
    batch, _, seq = size.partition("x")
    dims = {"batch": int(batch or 1)}
    if seq:
        dims["seq"] = int(seq)
    return name, dims


def cuda_torch():
    """torch, when it is installed and sees a CUDA device; else a one-line AitError."""
    try:
        import torch
    except ImportError:
        raise AitError("bench on a cuda target needs PyTorch with CUDA (it times with "
                       "torch.cuda.Event): pip install -e \".[torch]\"") from None
    if not torch.cuda.is_available():
        raise AitError(f"bench on a cuda target needs a CUDA device; PyTorch {torch.__version__} "
                       "sees none")
    return torch


def check(vs: list):
    """torch, if `vs` names comparisons a cuda bench can make and there is a GPU to make them on
    (called before building, and again before timing)."""
    cpu_only = [v for v in vs if v != "torch"]
    if cpu_only:
        raise AitError(f"--vs {', '.join(cpu_only)} compares on cpu only; on a cuda target --vs "
                       "takes torch (eager, eager + CUDA graph, torch.compile)")
    return cuda_torch()


# -- timing -----------------------------------------------------------------------------------------
def event_times(torch, fn, warmup: int, runs: int) -> list:
    """Milliseconds of `runs` calls of fn, each between two CUDA events, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def summary(times: list) -> dict:
    if len(times) < 2:  # statistics.quantiles needs two
        return {"median_ms": times[0], "p10_ms": times[0], "p90_ms": times[0]}
    q = statistics.quantiles(times, n=10)
    return {"median_ms": statistics.median(times), "p10_ms": q[0], "p90_ms": q[-1]}


def case_runs(dims: dict, runs: int, warmup: int) -> tuple:
    """(runs, warmup) for a case: fewer for large ones (see LARGE_ROWS)."""
    if math.prod(dims.values()) > LARGE_ROWS:
        return min(runs, LARGE_RUNS), min(warmup, LARGE_WARMUP)
    return runs, warmup


def max_abs(torch, ours: dict, theirs: dict) -> float:
    return max(float((ours[k].float() - theirs[k].float()).abs().max()) for k in theirs)


def rel_l2(ours: dict, want: dict) -> float:
    """||ours - want|| / ||want|| over all outputs together (float64 sums)."""
    num = sum(float((ours[k].double() - want[k].double()).pow(2).sum()) for k in want)
    den = sum(float(want[k].double().pow(2).sum()) for k in want)
    return math.sqrt(num / den) if den else math.sqrt(num)


def case_compile_mode(mode: str, dims: dict) -> str:
    """The torch.compile mode of a case: `auto` is reduce-overhead at batch 1, else default."""
    if mode != "auto":
        return mode
    return "reduce-overhead" if dims.get("batch", 1) == 1 else "default"


def float32_outputs(torch, reference, names, args) -> dict:
    """The float32 module's outputs on float32 copies of `args`, without TF32 (the yardstick of
    both float16 sides' errors)."""
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        args32 = [a.float() if a.is_floating_point() else a for a in args]
        return dict(zip(names, reference(*args32)))
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags


def time_ours(torch, build_dir: str, inputs: dict, graphs: bool, warmup: int, runs: int) -> tuple:
    """(summary, outputs of the first call) of our library, its CUDA graphs on or off."""
    with model_with(build_dir, {"AIT_CUDA_GRAPHS": "1" if graphs else "0"}) as model:
        tensors = {k: numpy_to_torch(v).cuda() for k, v in inputs.items()}
        first = {k: v.clone() for k, v in model.run(tensors).items()}
        outs = {k: torch.empty_like(v) for k, v in first.items()}
        result = summary(event_times(torch, lambda: model.run(tensors, outputs=outs), warmup, runs))
        torch.cuda.synchronize()
        result["max_abs_diff_vs_first_run"] = max_abs(torch, outs, first)
    return result, first


def torch_graph(torch, module, args, warmup: int, runs: int) -> dict:
    """PyTorch eager captured into one CUDA graph and replayed (static inputs)."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                module(*args)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            module(*args)
        return summary(event_times(torch, g.replay, warmup, runs))
    except Exception as exc:  # capture refuses some modules (host syncs)
        return {"skipped": f"{type(exc).__name__}: {exc}"[:300]}


def torch_compile(torch, module, args, names, mode: str, warmup: int, runs: int) -> tuple:
    """(summary with compile_s, outputs) of torch.compile(module, mode) at static shapes (each
    case compiles anew), or ({'skipped': why}, None)."""
    if mode == "none":
        return {"skipped": "--compile-mode none"}, None
    try:
        from torch import _dynamo
        _dynamo.reset()  # the previous case's graphs and guards
        compiled = torch.compile(module, mode=mode, dynamic=False)
        start = time.perf_counter()
        outputs = {n: t.clone() for n, t in zip(names, compiled(*args))}  # compiles
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - start
        result = summary(event_times(torch, lambda: compiled(*args), warmup, runs))
    except Exception as exc:  # Dynamo's and Inductor's failures are many and version-specific
        return {"skipped": f"torch.compile failed ({type(exc).__name__}: {exc})"[:300]}, None
    result.update(mode=mode, compile_s=compile_s)
    return result, outputs


def bench_case(torch, build_dir: str, twin, module, dtype, inputs: dict, warmup: int, runs: int,
               compile_mode: str, reference=None) -> dict:
    """One case's row: our two sides, and the PyTorch sides when `module` (the twin on the GPU)
    is given; with `reference` (the twin in float32 on the GPU, for a 16-bit model) the relative
    L2 error of our outputs and of PyTorch eager's against it."""
    row = {}
    row["ait_build"], ours = time_ours(torch, build_dir, inputs, True, warmup, runs)
    row["ait_build_no_graphs"], _ = time_ours(torch, build_dir, inputs, False, warmup, runs)
    if module is None:
        return row
    args = [a.to("cuda", dtype) if a.is_floating_point() else a.cuda()
            for a in twin.to_args(inputs)]
    with torch.inference_mode():
        theirs = dict(zip(twin.outputs, module(*args)))
        row["torch_eager"] = summary(event_times(torch, lambda: module(*args), warmup, runs))
        row["torch_eager_cuda_graph"] = torch_graph(torch, module, args, warmup, runs)
        row["torch_compile"], compiled = torch_compile(torch, module, args, twin.outputs,
                                                       compile_mode, warmup, runs)
        if reference is not None:
            want = float32_outputs(torch, reference, twin.outputs, args)
            row["rel_l2_vs_float32"] = {"ait_build": rel_l2(ours, want),
                                        "torch_eager": rel_l2(theirs, want)}
    row["max_abs_diff"] = max_abs(torch, ours, theirs)
    row["max_abs_torch_output"] = max(float(theirs[k].float().abs().max()) for k in theirs)
    if compiled is not None:
        row["torch_compile"]["max_abs_diff"] = max_abs(torch, ours, compiled)
    return row


def add_ratios(row: dict) -> None:
    """ours/theirs for each PyTorch side that ran (below 1: we are faster), speedup_vs_eager
    (eager/ours), and every side's throughput: items_per_s, the batch over the median."""
    mine = row["ait_build"]["median_ms"]
    batch = row.get("dims", {}).get("batch", 1)
    for key in ("ait_build", "ait_build_no_graphs") + tuple(k for k, _ in TORCH_MODES):
        if row.get(key, {}).get("median_ms"):
            row[key]["items_per_s"] = batch * 1e3 / row[key]["median_ms"]
    for key, _ in TORCH_MODES:
        if "median_ms" in row.get(key, {}):
            row[key]["ratio"] = mine / row[key]["median_ms"]
    if "torch_eager" in row:
        row["speedup_vs_eager"] = row["torch_eager"]["median_ms"] / mine


# -- the command ----------------------------------------------------------------------------------
def run_bench(ctx, manifest, target: str, batches: list, vs: list, runs: int | None,
              warmup: int | None, dims: dict, compile_mode: str = "default",
              on_case=None) -> dict:
    """The report for every batch; on_case(report) after each case (to save finished cases)."""
    torch = check(vs)
    runs = DEFAULT_RUNS if runs is None else runs
    warmup = DEFAULT_WARMUP if warmup is None else warmup
    dtype_name = manifest.raw.get("dtype", "float16")
    report = {"spec": os.path.relpath(ctx.spec), "model": manifest.name, "target": target,
              "backend": manifest.backend, "dtype": dtype_name, "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "platform": platform.platform(),
              "python": sys.version.split()[0], "clock": CLOCK, "runs": runs,
              "warmup": warmup, "vs": vs,
              "compile_mode": compile_mode if "torch" in vs else None, "results": []}
    twin = module = dtype = reference = None
    if "torch" in vs:
        from ait_build.bench.source_twin import NoComparison
        try:
            twin = ctx.twin()
        except NoComparison as exc:  # ours is still timed
            report["no_comparison"] = str(exc)
            print(exc, file=sys.stderr, flush=True)
    if twin is not None:
        dtype = getattr(torch, dtype_name)
        if dtype != torch.float32:
            import copy
            reference = copy.deepcopy(twin.module).to("cuda")
        module = twin.module.to("cuda", dtype)
        if twin.note:
            report["note"] = twin.note
    for batch in batches:
        case = dict(dims, **({"batch": batch} if "batch" in manifest.dim_names else {}))
        inputs = make_inputs(manifest, ctx.graph, case, seed=0)
        full = {d.name: case.get(d.name, d.opt) for d in manifest.dims}  # opt where not given
        case_runs_, case_warmup = case_runs(full, runs, warmup)
        row = {"model": manifest.name, "dims": full, "runs": case_runs_, "warmup": case_warmup}
        row.update(bench_case(torch, ctx.build_dir, twin, module, dtype, inputs,
                              case_warmup, case_runs_, case_compile_mode(compile_mode, full),
                              reference))
        add_ratios(row)
        report["results"].append(row)
        print(case_line(row), file=sys.stderr, flush=True)
        if on_case:
            on_case(report)
        torch.cuda.empty_cache()
    return report


def _dims(row: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in row["dims"].items()) or "-"


def case_line(row: dict) -> str:
    """One line per finished case, for the log of a run that may be cut short."""
    text = (f"{_dims(row)}: ait-build {row['ait_build']['median_ms']:.3f} ms (no graphs "
            f"{row['ait_build_no_graphs']['median_ms']:.3f})")
    for key, head in TORCH_MODES:
        if key in row:
            e = row[key]
            text += f", {head} " + (f"{e['median_ms']:.3f} ms" if "median_ms" in e else "skipped")
    if "max_abs_diff" in row:
        text += f", max|diff| {row['max_abs_diff']:.3g}"
    return text


def table(report: dict) -> str:
    """Medians in ms and our throughput (items/s: the batch over our median); ours/<side> is our
    median (with graphs) over that side's (below 1: we are faster); max|diff| is against PyTorch
    eager's outputs; for a 16-bit model, the relative L2 error of our outputs and of PyTorch
    eager's (in brackets) against PyTorch in float32. Skip reasons follow the table."""
    compared = [(k, h) for k, h in TORCH_MODES if any(k in r for r in report["results"])]
    head = ["dims", "runs", "ait-build ms", "items/s", "no graphs ms"]
    for _, name in compared:
        head += [f"{name} ms", f"ours/{name}"]
    head += ["max|diff|"] if compared else []
    errors = any("rel_l2_vs_float32" in r for r in report["results"])
    head += ["rel L2 ours (eager)"] if errors else []
    rows, notes = [], [report[k] for k in ("no_comparison", "note") if report.get(k)]
    for r in report["results"]:
        ours = r["ait_build"]
        row = [_dims(r), str(r["runs"]), f"{ours['median_ms']:.3f}",
               f"{ours['items_per_s']:.0f}" if "items_per_s" in ours else "",
               f"{r['ait_build_no_graphs']['median_ms']:.3f}"]
        for key, name in compared:
            e = r.get(key, {"skipped": "not run"})
            if "skipped" in e:
                row += ["skipped", ""]
                notes.append(f"{_dims(r)}: {name} skipped: {e['skipped']}")
            else:
                row += [f"{e['median_ms']:.3f}", f"{e['ratio']:.2f}"]
        if compared:
            row.append(f"{r['max_abs_diff']:.2g}")
        if errors:
            e = r.get("rel_l2_vs_float32")
            row.append(f"{e['ait_build']:.1e} ({e['torch_eager']:.1e})" if e else "")
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    compile_note = f", torch.compile mode {report['compile_mode']}" if compared else ""
    title = (f"{report['model']} on {report['target']} ({report['device']}, {report['dtype']}, "
             f"torch {report['torch']}{compile_note}): medians of CUDA-event times, `runs` timed "
             f"calls per side after up to {report['warmup']} untimed")
    return "\n".join([title, line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
                     + [line(r) for r in rows] + notes)
