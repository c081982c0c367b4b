"""CUDA-event latency of cuda builds beside PyTorch eager (float16, the spec's weights) on the same
GPU, in one process: median of `--runs` timed calls after `--warmup`, each call bracketed by
events on the current stream (host-side launch gaps inside a call count, as a user sees them).
Our side runs with its CUDA graphs (the default: repeated calls on the same buffers replay one
graph) and without (AIT_CUDA_GRAPHS=0); PyTorch eager runs as is and captured in a CUDA graph.

    python bench/cuda_bench.py --target h200 --cases "resnet50:1 bert_base:1x128 vit_b16:1" \
        --out bench/results/h200.json

Builds with SCons first (`scons target=<t> model=<m>`); the seed specs are float16 already.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# a case is model:batch or model:batchxseq; the default is batch 1 (BERT at seq 128)
DEFAULT_CASES = "resnet50:1 bert_base:1x128 vit_b16:1"


def parse_case(text: str) -> tuple:
    name, _, size = text.partition(":")
    batch, _, seq = size.partition("x")
    dims = {"batch": int(batch or 1)}
    if name == "bert_base":
        dims["seq"] = int(seq or 128)
    return name, dims


def event_times(torch, fn, warmup: int, runs: int) -> list:
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
    q = statistics.quantiles(times, n=10)
    return {"median_ms": statistics.median(times), "p10_ms": q[0], "p90_ms": q[-1]}


_BUILT: dict = {}


def bench_model(torch, name: str, target: str, dims: dict, warmup: int, runs: int) -> dict:
    from ait_build.bench_models import torch_twin
    from ait_build.build_cli import build, make_inputs
    from ait_build.runtime import Model
    from ait_build.spec.model import load_model
    if (name, target) not in _BUILT:  # one SCons run and one graph per model
        spec = os.path.join(ROOT, "specs", f"{name}.yaml")
        _BUILT[(name, target)] = (build(spec, target, quiet=True), load_model(spec))
    out, graph = _BUILT[(name, target)]
    row = {"model": name, "dims": dims}
    # the library's own CUDA graphs (replayed when a call repeats dims and buffers), and without
    for key, graphs in (("ait_build", "1"), ("ait_build_no_graphs", "0")):
        os.environ["AIT_CUDA_GRAPHS"] = graphs  # read by create()
        with Model(out) as model:
            inputs = make_inputs(model.manifest, graph, dims, seed=0)
            tensors = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
            ours = {k: v.clone() for k, v in model.run(tensors).items()}
            outs = {k: torch.empty_like(v) for k, v in ours.items()}
            row[key] = summary(event_times(torch, lambda: model.run(tensors, outputs=outs), warmup,
                                           runs))
            torch.cuda.synchronize()
            row[key]["max_abs_diff_vs_first_run"] = max(
                float((outs[k].float() - ours[k].float()).abs().max()) for k in ours)
    os.environ.pop("AIT_CUDA_GRAPHS")
    twin = torch_twin(graph, name)
    module = twin.module.half().cuda()
    args = [a.cuda().half() if a.is_floating_point() else a.cuda() for a in twin.to_args(inputs)]
    with torch.inference_mode():
        theirs = dict(zip(twin.outputs, module(*args)))
        row["torch_eager"] = summary(event_times(torch, lambda: module(*args), warmup, runs))
        row["torch_eager_cuda_graph"] = torch_graph(torch, module, args, warmup, runs)
    row["max_abs_diff"] = max(float((ours[k].float() - theirs[k].float()).abs().max())
                              for k in theirs)
    row["max_abs_torch_output"] = max(float(theirs[k].float().abs().max()) for k in theirs)
    row["speedup_vs_eager"] = row["torch_eager"]["median_ms"] / row["ait_build"]["median_ms"]
    return row


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="h200")
    parser.add_argument("--cases", default=DEFAULT_CASES,
                        help="space-separated model:batch or bert_base:batchxseq")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    import torch
    report = {"target": args.target, "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "platform": platform.platform(),
              "warmup": args.warmup, "runs": args.runs, "clock": "torch.cuda.Event",
              "results": []}
    for case in args.cases.split():
        name, dims = parse_case(case)
        big = dims["batch"] * dims.get("seq", 1) > 512  # long runs: fewer of them
        runs, warmup = (min(args.runs, 30), min(args.warmup, 5)) if big else (args.runs, args.warmup)
        row = bench_model(torch, name, args.target, dims, warmup, runs)
        row["runs"] = runs
        report["results"].append(row)
        tg = row["torch_eager_cuda_graph"].get("median_ms", float("nan"))
        print(f"{args.target} {name} {row['dims']}: ait-build {row['ait_build']['median_ms']:.3f} ms "
              f"(no graphs {row['ait_build_no_graphs']['median_ms']:.3f}), torch eager "
              f"{row['torch_eager']['median_ms']:.3f} ms (x{row['speedup_vs_eager']:.2f}), eager+graph "
              f"{tg:.3f} ms, max|diff| {row['max_abs_diff']:.3g}", flush=True)
        if args.out:  # after every case: a run cut short still leaves its finished cases
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as fh:
                fh.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
