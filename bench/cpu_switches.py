"""Context switches per call of a built cpu library, per thread of the process, with the calls'
time percentiles. A thread that blocks (a worker going to sleep, a lock held by another thread)
counts a voluntary switch and, on a VM, may wake tens of microseconds late; this shows how often
that happens inside a run. Linux only (/proc/self/task/*/status).

    python bench/cpu_switches.py build/cpu/resnet50_float32 --batch 1 --runs 100
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_layers import Library  # noqa: E402


def switches() -> dict:
    """thread id and name -> (voluntary, involuntary) context switches so far"""
    out = {}
    for task in glob.glob("/proc/self/task/*"):
        with open(os.path.join(task, "status")) as fh:
            fields = dict(line.split(":\t", 1) for line in fh.read().splitlines() if ":\t" in line)
        out[f"{os.path.basename(task)} {fields['Name'].strip()}"] = (
            int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dim", action="append", default=[], help="NAME=VALUE, e.g. seq=128")
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    dims = {"batch": args.batch, **{k: int(v) for k, v in (d.split("=") for d in args.dim)}}
    lib = Library(args.build, dims)
    for _ in range(5):
        lib.run(keep=False)
    before, times = switches(), []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        lib.run(keep=False)
        times.append((time.perf_counter() - t0) * 1e3)
    after = switches()
    for name, (vol, invol) in sorted(after.items()):
        if name in before and (vol, invol) != before[name]:
            print(f"  thread {name}: {(vol - before[name][0]) / args.runs:.1f} voluntary, "
                  f"{(invol - before[name][1]) / args.runs:.1f} involuntary switches per call")
    t = np.array(times)
    print(f"{args.build}: ms per call min {t.min():.1f}, p10 {np.percentile(t, 10):.1f}, median "
          f"{np.median(t):.1f}, p90 {np.percentile(t, 90):.1f} ({args.runs} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
