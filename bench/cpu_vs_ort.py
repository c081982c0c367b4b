"""Our cpu library against ONNX Runtime on imported specs, in one process, taking turns, with the
same weights and the same number of threads: the load-robust companion of `ait-build bench
--vs onnxruntime` on a shared machine.

For each SPEC (a spec `ait-build import` wrote, with its `source:` field, as built: e.g. the
float32 copy `ait-build bench --dtype float32` leaves at build/specs/NAME_float32.yaml): the
library in build/cpu/NAME, and ONNX Runtime on the source module rebuilt with the spec's weights
(ait_build/bench/source_twin.py), exported with torch.onnx.export. Each round gives each side a
turn of --runs timed calls after one untimed call, with a pause before each turn so that the
other side's pool has stopped spinning (ONNX Runtime's workers spin after a run). Prints, per
round and overall, each side's minimum and median (ms), the ratio of the medians and of the
minimums, and the load average (os.getloadavg) before and after: on a shared machine other work
lands on both sides, but not evenly, so the rounds' spread is part of the result. Overall it also
gives each side's median CPU time per call (the process's, all threads): with --threads 1 that
is the work itself, whatever else the machine runs; with more threads it includes spinning.

    ait-build bench build/zoo/regnet_x_3_2gf.yaml --target cpu --dtype float32   # builds it
    python bench/cpu_vs_ort.py build/specs/regnet_x_3_2gf_float32.yaml --threads 1 --rounds 3

Needs torch, onnx and onnxruntime; the library's threads are AIT_NUM_THREADS's, ONNX Runtime's
intra-op pool gets --threads (the same number is exported to AIT_NUM_THREADS unless set).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from ait_build.bench.competitors import Context
from ait_build.ops.reference import random_inputs

SETTLE_S = 0.1


def ort_session(twin, args: tuple, threads: int):
    import onnxruntime as ort
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        torch.onnx.export(twin.module, args, path, input_names=list(twin.input_names),
                          output_names=list(twin.outputs), dynamo=False)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def timed(call, runs: int, cpu: list) -> list:
    """`runs` calls' wall times (ms); their CPU times go to `cpu`."""
    time.sleep(SETTLE_S)
    call()
    out = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        call()
        out.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return out


def line(label: str, ours: list, theirs: list, load0: float, load1: float) -> str:
    mo, mt = statistics.median(ours), statistics.median(theirs)
    return (f"{label:>8}  ours min {min(ours):7.2f} med {mo:7.2f} | ort min {min(theirs):7.2f} "
            f"med {mt:7.2f} | med ratio {mo / mt:5.2f} min ratio {min(ours) / min(theirs):5.2f}"
            f" | load {load0:.2f}->{load1:.2f}")


def compare(spec: str, args) -> dict:
    name = os.path.splitext(os.path.basename(spec))[0]
    ctx = Context(spec, name, os.path.join(args.project, "build", "cpu", name))
    inputs = random_inputs(ctx.graph, {"batch": args.batch}, seed=0)  # other dims: their opt
    twin = ctx.twin()
    session = ort_session(twin, twin.to_args(inputs), args.threads)
    feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), twin.to_args(inputs))}
    model = ctx.model()
    out_name = twin.outputs[0]
    ours_out = model.run(inputs)[out_name]
    ort_out = session.run(None, feed)[0]
    err = float(np.abs(ours_out - ort_out).max() / max(np.abs(ort_out).max(), 1e-30))
    ours_call = lambda: model.run(inputs)  # noqa: E731
    ort_call = lambda: session.run(None, feed)  # noqa: E731
    print(f"== {name} batch {args.batch}, {args.threads} threads; max |ours - ort| / max |ort| "
          f"{err:.1e}", flush=True)
    all_ours, all_ort, ratios, cpu_ours, cpu_ort = [], [], [], [], []
    for r in range(args.rounds):
        load0 = os.getloadavg()[0]
        theirs = timed(ort_call, args.runs, cpu_ort)
        ours = timed(ours_call, args.runs, cpu_ours)
        print(line(f"round {r + 1}", ours, theirs, load0, os.getloadavg()[0]), flush=True)
        all_ours += ours
        all_ort += theirs
        ratios.append(statistics.median(ours) / statistics.median(theirs))
    cpu = statistics.median(cpu_ours), statistics.median(cpu_ort)
    print(line("all", all_ours, all_ort, os.getloadavg()[1], os.getloadavg()[0]) +
          f" | round ratios {min(ratios):.2f}-{max(ratios):.2f} | cpu med {cpu[0]:.2f} / "
          f"{cpu[1]:.2f} ms", flush=True)
    ctx.close()
    return dict(name=name, batch=args.batch, threads=args.threads,
                ours=statistics.median(all_ours), ort=statistics.median(all_ort),
                ours_min=min(all_ours), ort_min=min(all_ort),
                spread=(min(ratios), max(ratios)), cpu=cpu, err=err)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("specs", nargs="+",
                    help="imported specs as built, e.g. build/specs/NAME_float32.yaml")
    ap.add_argument("--project", default=".",
                    help="the project they were built in (build/cpu/NAME)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20, help="timed calls per side and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the summary rows to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("AIT_NUM_THREADS", str(args.threads))
    import torch
    torch.set_num_threads(1)  # the export's threads must not compete with the timed sides
    summary = [compare(spec, args) for spec in args.specs]
    print("\nmodel                 ours ms   ort ms   ratio (medians)  rounds     "
          "cpu ms ours / ort")
    for s in summary:
        print(f"{s['name']:20s} {s['ours']:8.2f} {s['ort']:8.2f}   {s['ours'] / s['ort']:.2f}"
              f"             {s['spread'][0]:.2f}-{s['spread'][1]:.2f}  "
              f"{s['cpu'][0]:8.2f} / {s['cpu'][1]:.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(rows=summary, load_after=os.getloadavg()), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
