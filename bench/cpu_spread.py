"""Minimum and median of a built cpu library's run() at one batch size, in this process alone:
for the spread that a busy machine adds (issue 14). Usage:

    python bench/cpu_spread.py BUILD_DIR [--batch 1] [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from ait_build.runtime import Model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    with open(f"{args.build_dir}/manifest.json") as fh:
        manifest = json.load(fh)
    env = {d["name"]: d["opt"] for d in manifest["dims"]} | {"batch": args.batch}
    rng = np.random.default_rng(0)
    feeds = {t["name"]: rng.standard_normal([env.get(d, d) for d in t["shape"]]).astype(np.float32)
             for t in manifest["inputs"]}
    with Model(args.build_dir) as model:
        times = []
        for i in range(3 + args.runs):
            t0 = time.perf_counter()
            model.run(feeds, dims={"batch": args.batch})
            if i >= 3:
                times.append((time.perf_counter() - t0) * 1e3)
    print(f"{min(times):.1f} / {statistics.median(times):.1f}")


if __name__ == "__main__":
    main()
