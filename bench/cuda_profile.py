"""Where a call's GPU time goes: torch.profiler's per-kernel CUDA time for one call of our library
(run without its CUDA graphs, so every kernel launch is its own event) and for the PyTorch eager
twin, on the same inputs and GPU, in one process; and our library's time per graph node with
its TFLOP/s and GB/s against the measured ceilings (ait_build/bench/step_report.py: an event after
every kernel call). Prints the kernels that take the most time per call and writes them as JSON.
Builds with SCons first, like `ait-build bench`. A case names a model under specs/ or a spec file
(an imported one is compared with its rebuilt `source:` module, as `bench --vs torch` does);
`--ours-only` leaves PyTorch out.

    python bench/cuda_profile.py --target h200 --cases "bert_base:8x4096 vit_b16:256" \
        --out profile.json
    python bench/cuda_profile.py --cases build/zoo/efficientnet_v2_s.yaml:128 --ours-only --top 30
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from ait_build.bench.cuda import parse_case  # noqa: E402


def device_us(event) -> float:
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        if hasattr(event, attr):
            return float(getattr(event, attr))
    return 0.0


def kernel_table(torch, fn, calls: int, top: int) -> dict:
    """{total_ms, kernels: [(name, ms per call, launches per call)]} over `calls` calls of fn."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    rows = [(e.key, device_us(e) / 1e3 / calls, e.count / calls) for e in prof.key_averages()
            if device_us(e) > 0]
    rows.sort(key=lambda r: -r[1])
    return {"total_ms": sum(r[1] for r in rows),
            "kernels": [{"name": n[:160], "ms": ms, "launches": c} for n, ms, c in rows[:top]]}


def profile_case(torch, name: str, target: str, dims: dict, calls: int, top: int,
                 ours_only: bool = False) -> dict:
    from ait_build.bench.source_twin import comparison_twin
    from ait_build.build.invoke import build
    from ait_build.runtime.inputs import make_inputs
    from ait_build.runtime import Model
    from ait_build.spec.model import load_model
    spec = name if name.endswith((".yaml", ".yml")) else os.path.join(ROOT, "specs", f"{name}.yaml")
    out, graph = build(spec, target, quiet=True), load_model(spec)
    os.environ["AIT_CUDA_GRAPHS"] = "0"
    row = {"model": name, "dims": dims}
    with Model(out) as model:
        inputs = make_inputs(model.manifest, graph, dims, seed=0)
        tensors = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
        outs = {k: torch.empty_like(v) for k, v in model.run(tensors).items()}
        row["ait_build"] = kernel_table(torch, lambda: model.run(tensors, outputs=outs), calls, top)
        from ait_build.bench import steps as bench_steps, step_report
        from ait_build.pipeline import find_target
        row["nodes"] = bench_steps.node_rows(spec, model, find_target(target), inputs, dims,
                                             max(calls, 5))
        row["kinds"] = step_report.by_kind(row["nodes"])
        print(step_report.text(row["nodes"]))
    if ours_only:
        return row
    twin = comparison_twin(spec, graph, graph.name)
    module = twin.module.half().cuda()
    args = [a.cuda().half() if a.is_floating_point() else a.cuda() for a in twin.to_args(inputs)]
    with torch.inference_mode():
        row["torch_eager"] = kernel_table(torch, lambda: module(*args), calls, top)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="h200")
    parser.add_argument("--cases", default="bert_base:128x128")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--out", default="")
    parser.add_argument("--ours-only", action="store_true", help="leave PyTorch's kernels out")
    args = parser.parse_args()
    import torch
    report = {"target": args.target, "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "calls": args.calls, "results": []}
    for case in args.cases.split():
        name, dims = parse_case(case)
        row = profile_case(torch, name, args.target, dims, args.calls, args.top, args.ours_only)
        report["results"].append(row)
        for side in ("ait_build",) + (() if args.ours_only else ("torch_eager",)):
            t = row[side]
            print(f"{args.target} {name} {dims} {side}: {t['total_ms']:.3f} ms of kernels per call")
            for k in t["kernels"]:
                print(f"  {k['ms']:8.3f} ms  x{k['launches']:<5g} {k['name'][:110]}")
        sys.stdout.flush()
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
