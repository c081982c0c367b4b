"""Our cpu library against ONNX Runtime on imported torchvision models, in one process, taking
turns, with the same weights and the same number of threads.

For each MODULE:FACTORY: the library built from the spec `ait-build import torch` wrote
(PROJECT/build/cpu/NAME, NAME the factory's name unless --name), and ONNX Runtime on the same
module with the spec's weights loaded, exported with torch.onnx.export. Each round gives each
side a turn of --runs timed calls after one untimed call, with a pause before each turn so that
the other side's pool has stopped spinning (ONNX Runtime's workers spin after a run). Prints, per
round and overall, each side's minimum and median (ms), the ratio of the medians and of the
minimums, and the load average (os.getloadavg) before and after: on a shared machine other work
lands on both sides, but not evenly, so the rounds' spread is part of the result. Overall it also
gives each side's median CPU time per call (the process's, all threads): with --threads 1 that
is the work itself, whatever else the machine runs; with more threads it includes spinning.

    cd PROJECT && ait-build import torch torchvision.models:mnasnet1_0 \
        --input x:batch,3,224,224 -o specs/mnasnet1_0.yaml && ait-build build mnasnet1_0
    python bench/cpu_vs_ort.py torchvision.models:mnasnet1_0 --project PROJECT --rounds 3

Needs torch, onnx and onnxruntime; the library's threads are AIT_NUM_THREADS's, ONNX Runtime's
intra-op pool gets --threads (the same number is exported to AIT_NUM_THREADS unless set).
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import tempfile
import time

import numpy as np

SETTLE_S = 0.1


def torch_module(source: str, weights: str):
    """The module MODULE:FACTORY names, with the spec's weights loaded (names are state_dict's)."""
    import torch
    from safetensors.numpy import load_file
    module_name, _, factory = source.partition(":")
    module = getattr(importlib.import_module(module_name), factory)().eval()
    state = module.state_dict(keep_vars=True)
    with torch.no_grad():  # in place: some modules' load_state_dict wants their own metadata
        for key, value in load_file(weights).items():
            if key in state:
                state[key].copy_(torch.from_numpy(value))
    return module


def ort_session(module, x: np.ndarray, threads: int):
    import onnxruntime as ort
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        torch.onnx.export(module, (torch.from_numpy(x),), path, input_names=["x"],
                          output_names=["y"], dynamo=False)
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


def compare(source: str, args) -> dict:
    from ait_build.runtime import Model
    name = args.name or source.partition(":")[2]
    build = os.path.join(args.project, "build", "cpu", name)
    module = torch_module(source, os.path.join(args.project, "specs", f"{name}.safetensors"))
    x = np.random.default_rng(0).standard_normal((args.batch, 3, 224, 224)).astype(np.float32)
    session = ort_session(module, x, args.threads)
    model = Model(build)
    out_name = next(iter(model.outputs))
    ours_out = model.run({"x": x})[out_name]
    ort_out = session.run(None, {"x": x})[0]
    err = float(np.abs(ours_out - ort_out).max() / max(np.abs(ort_out).max(), 1e-30))
    ours_call = lambda: model.run({"x": x})  # noqa: E731
    ort_call = lambda: session.run(None, {"x": x})  # noqa: E731
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
    model.close()
    return dict(name=name, ours=statistics.median(all_ours), ort=statistics.median(all_ort),
                spread=(min(ratios), max(ratios)), cpu=cpu)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+", help="MODULE:FACTORY, e.g. torchvision.models:mnasnet1_0")
    ap.add_argument("--project", default=".", help="the project the specs were imported into")
    ap.add_argument("--name", help="the spec's name, when it is not the factory's")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20, help="timed calls per side and round")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    os.environ.setdefault("AIT_NUM_THREADS", str(args.threads))
    import torch
    torch.set_num_threads(1)  # the export's threads must not compete with the timed sides
    summary = [compare(source, args) for source in args.sources]
    print("\nmodel                 ours ms   ort ms   ratio (medians)  rounds     cpu ms ours / ort")
    for s in summary:
        print(f"{s['name']:20s} {s['ours']:8.2f} {s['ort']:8.2f}   {s['ours'] / s['ort']:.2f}"
              f"             {s['spread'][0]:.2f}-{s['spread'][1]:.2f}  "
              f"{s['cpu'][0]:8.2f} / {s['cpu'][1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
