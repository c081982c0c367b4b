"""A built GPU library with and without dependent launches (capabilities.dependent_launch,
docs/cuda.md), in one process: for each build folder and batch, models created with
AIT_DEPENDENT_LAUNCH=1 and =0 (each with CUDA graphs on, then off) are timed with CUDA events in
alternating rounds on the same random inputs, and every mode's output is compared with the
first mode's. The kernels and their order are the same in every mode, so the outputs must be
equal bit for bit: a kernel that read its input before the previous kernel had written it
would show here.

    python bench/dependent_launch_ab.py build/h200/resnet50 build/h200/bert_base \\
        --batch 1,8 --dim seq=128 --rounds 5 --runs 200 --json dependent_launch_ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from ait_build.bench.cuda import cuda_torch, event_times
from ait_build.runtime import Model
from ait_build.runtime.inputs import make_inputs
from ait_build.runtime.manifest import load_manifest
from ait_build.runtime.model import numpy_to_torch
from ait_build.runtime.settings import model_with

# (name, AIT_DEPENDENT_LAUNCH, AIT_CUDA_GRAPHS); both are read when a model is created
MODES = (("dependent+graphs", "1", "1"), ("plain+graphs", "0", "1"),
         ("dependent", "1", "0"), ("plain", "0", "0"))


def create(build_dir: str, dependent: str, graphs: str) -> Model:
    return model_with(build_dir, {"AIT_DEPENDENT_LAUNCH": dependent, "AIT_CUDA_GRAPHS": graphs})


def case(torch, build_dir: str, dims: dict, rounds: int, runs: int, warmup: int) -> dict:
    manifest = load_manifest(os.path.join(build_dir, "manifest.json"))
    inputs = make_inputs(manifest, None, dims, seed=0)
    tensors = {k: numpy_to_torch(v).cuda() for k, v in inputs.items()}
    models = {name: create(build_dir, d, g) for name, d, g in MODES}
    try:
        first = {}
        outs = {}
        for name, model in models.items():
            got = model.run(tensors)
            first[name] = {k: v.clone() for k, v in got.items()}
            outs[name] = {k: torch.empty_like(v) for k, v in got.items()}
        times = {name: [] for name in models}
        for _ in range(rounds):  # alternating, so drifts of the clock fall on every mode
            for name, model in models.items():
                times[name] += event_times(torch, lambda: model.run(tensors, outputs=outs[name]),
                                           warmup, runs)
        torch.cuda.synchronize()
        ref = first[MODES[0][0]]
        row = {"build_dir": build_dir, "dims": dims, "rounds": rounds, "runs": runs, "modes": {}}
        for name in models:
            diff = max(float((first[name][k].float() - ref[k].float()).abs().max()) for k in ref)
            again = max(float((outs[name][k].float() - ref[k].float()).abs().max()) for k in ref)
            t = sorted(times[name])
            row["modes"][name] = {"median_ms": statistics.median(t), "min_ms": t[0],
                                  "p10_ms": t[len(t) // 10], "p90_ms": t[len(t) * 9 // 10],
                                  "max_abs_diff": max(diff, again)}
        return row
    finally:
        for model in models.values():
            model.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build_dirs", nargs="+")
    p.add_argument("--batch", default="1", help="comma-separated batches (default 1)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=200, help="timed calls per mode and round")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="another dim's value (seq=128); the others stay at their opt")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    torch = cuda_torch()
    fixed = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    rows = []
    for build_dir in args.build_dirs:
        names = load_manifest(os.path.join(build_dir, "manifest.json")).dim_names
        for batch in (int(b) for b in args.batch.split(",")):
            dims = dict({k: v for k, v in fixed.items() if k in names},
                        **({"batch": batch} if "batch" in names else {}))
            row = case(torch, build_dir, dims, args.rounds, args.runs, args.warmup)
            rows.append(row)
            m = row["modes"]
            print(f"{os.path.basename(build_dir.rstrip('/'))} {dims}: " + ", ".join(
                f"{k} {v['median_ms']:.4f} ms (diff {v['max_abs_diff']:g})" for k, v in m.items()),
                flush=True)
            if args.json:
                with open(args.json, "w", encoding="utf-8") as fh:
                    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, fh, indent=1)
            if batch == 1 and "batch" not in names:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
