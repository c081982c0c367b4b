"""CUDA-event latency of cuda builds beside PyTorch eager (float16, the spec's weights) on the same
GPU, in one process: median of `--runs` timed calls after `--warmup`, each call bracketed by
events on the current stream (host-side launch gaps inside a call count, as a user sees them).

    python bench/cuda_bench.py --target h200 --models resnet50,bert_base,vit_b16 \
        --out bench/results/h200_batch1.json

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

DIMS = {"resnet50": {"batch": 1}, "bert_base": {"batch": 1, "seq": 128}, "vit_b16": {"batch": 1}}


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


def bench_model(torch, name: str, target: str, dims: dict, warmup: int, runs: int) -> dict:
    from ait_build.bench_models import torch_twin
    from ait_build.build_cli import build, make_inputs
    from ait_build.runtime import Model
    from ait_build.spec.model import load_model
    spec = os.path.join(ROOT, "specs", f"{name}.yaml")
    out = build(spec, target, quiet=True)
    graph = load_model(spec)
    row = {"model": name, "dims": dims}
    with Model(out) as model:
        inputs = make_inputs(model.manifest, graph, dims, seed=0)
        tensors = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
        ours = model.run(tensors)
        row["ait_build"] = summary(event_times(torch, lambda: model.run(tensors), warmup, runs))
        twin = torch_twin(graph, name)
        module = twin.module.half().cuda()
        args = [a.cuda().half() if a.is_floating_point() else a.cuda() for a in twin.to_args(inputs)]
        with torch.inference_mode():
            theirs = dict(zip(twin.outputs, module(*args)))
            row["torch_eager"] = summary(event_times(torch, lambda: module(*args), warmup, runs))
        row["max_abs_diff"] = max(float((ours[k].float() - theirs[k].float()).abs().max())
                                  for k in theirs)
        row["max_abs_torch_output"] = max(float(theirs[k].float().abs().max()) for k in theirs)
    row["speedup_vs_eager"] = row["torch_eager"]["median_ms"] / row["ait_build"]["median_ms"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="h200")
    parser.add_argument("--models", default="resnet50,bert_base,vit_b16")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    import torch
    report = {"target": args.target, "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "platform": platform.platform(),
              "warmup": args.warmup, "runs": args.runs, "clock": "torch.cuda.Event",
              "results": []}
    for name in args.models.split(","):
        row = bench_model(torch, name, args.target, DIMS[name], args.warmup, args.runs)
        report["results"].append(row)
        print(f"{args.target} {name} {row['dims']}: ait-build {row['ait_build']['median_ms']:.3f} ms, "
              f"torch eager {row['torch_eager']['median_ms']:.3f} ms "
              f"(x{row['speedup_vs_eager']:.2f}), max|diff| {row['max_abs_diff']:.3g}", flush=True)
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
