"""Where a case's time goes against its physical bound, kernel group by kernel group, from step
reports (`ait-build bench SPEC --target h200 --steps --json FILE`): for each case (dims) of each
report, per group of kernels (GEMMs and convs, attention, norms, elementwise and data movement),
the calls, the measured milliseconds, and the two bounds of the same work:

- `bound@peak`: each node at the larger of its FLOPs at the target's dense peak and its bytes
  (inputs and output once) at HBM bandwidth, the `ceilings` the report carries;
- `bound@measured`: the same with the FLOPs at the fastest GEMM or conv rate any node of the
  reports reached (a rate CUTLASS shows it reaches on this GPU; `--tflops` gives another), and
  no node faster than the fastest kernel of the reports (what one launch took here, timed
  alone: the floor at small batches).

The sum of a case's measured kernel times is above the library's call time at batch 1 (each
kernel is timed alone, between events; the call replays a CUDA graph), so the bound is compared
with both. Prints markdown; `--goals` gives DESIGN.md's goal per case, keyed as printed
(`resnet50:batch=1=0.35,...`).

    python bench/seed_gaps.py steps_resnet50.json steps_bert_s128.json --goals resnet50:batch=1=0.35
"""

from __future__ import annotations

import argparse
import json

GROUPS = (("GEMMs and convs", ("gemm", "conv", "linear", "matmul", "bmm")),
          ("attention", ("attention", "fmha", "softmax")),
          ("norms", ("norm",)),
          ("elementwise and movement", ()))


def group_of(node: dict) -> str:
    names = " ".join([node.get("op", "")] + list(node.get("kernels", [])))
    for group, keys in GROUPS:
        if any(k in names for k in keys):
            return group
    return GROUPS[-1][0]


def node_bound_ms(node: dict, tflops: float, tbps: float, floor_ms: float = 0.0) -> float:
    """The node's work at `tflops` and `tbps`, in ms, and at least `floor_ms`."""
    return max(node["flops"] / (tflops * 1e9), node["bytes"] / (tbps * 1e9), floor_ms)


def measured_limits(results: list) -> tuple:
    """(the fastest GEMM/conv TFLOP/s, the fastest kernel's ms) over every case's nodes."""
    nodes = [s for r in results for s in r["steps"]]
    rate = max((s["tflops"] for s in nodes if group_of(s) == GROUPS[0][0]), default=0.0)
    return rate, min(s["ms"] for s in nodes)


def case_rows(result: dict, rate: float, floor_ms: float) -> tuple:
    """(rows [group, calls, ms, bound@peak, bound@measured], the call's ms)."""
    steps = result["steps"]
    peak, tbps = steps[0]["ceilings"]
    rows = []
    for group, _ in GROUPS:
        mine = [s for s in steps if group_of(s) == group]
        if mine:
            rows.append([group, len(mine), sum(s["ms"] for s in mine),
                         sum(node_bound_ms(s, peak, tbps) for s in mine),
                         sum(node_bound_ms(s, rate or peak, tbps, floor_ms) for s in mine)])
    call = result["ait_build"]["median_ms"] if isinstance(result.get("ait_build"), dict) else None
    return rows, call


def parse_goals(text: str) -> dict:
    """'resnet50:1=0.35,bert_base:128:seq=128=5.2' -> {(model, key): ms}."""
    out = {}
    for item in filter(None, (text or "").split(",")):
        key, ms = item.rsplit("=", 1)
        out[key] = float(ms)
    return out


def case_key(result: dict) -> str:
    dims = result.get("dims", {})
    return ":".join([result.get("model", "")] + [f"{k}={v}" for k, v in sorted(dims.items())])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("reports", nargs="+", help="step reports (JSON) of ait-build bench --steps")
    ap.add_argument("--goals", default="", help="case=ms pairs, the case as printed")
    ap.add_argument("--tflops", type=float, default=0.0,
                    help="the GEMM rate of bound@measured instead of the reports' fastest")
    args = ap.parse_args()
    goals = parse_goals(args.goals)
    results = []
    for path in args.reports:
        with open(path, encoding="utf-8") as fh:
            results += json.load(fh)["results"]
    rate, floor_ms = measured_limits(results)
    rate = args.tflops or rate
    print(f"bound@measured: GEMMs and convs at {rate:.0f} TFLOP/s, no kernel under "
          f"{floor_ms * 1e3:.1f} us")
    for result in results:
        rows, call = case_rows(result, rate, floor_ms)
        key = case_key(result)
        total = [sum(r[i] for r in rows) for i in (2, 3, 4)]
        goal = goals.get(key)
        print(f"\n{key}: call {call:.3f} ms" if call else f"\n{key}:", end="")
        print(f", goal {goal} ms" if goal else "", end="")
        print(f"; kernels alone {total[0]:.3f} ms\n")
        print("| kernels | calls | ms | bound@peak ms | bound@measured ms | ms over bound@measured |")
        print("|---|---|---|---|---|---|")
        for group, calls, ms, at_peak, at_measured in rows + [["all", sum(r[1] for r in rows),
                                                                *total]]:
            print(f"| {group} | {calls} | {ms:.3f} | {at_peak:.3f} | {at_measured:.3f} | "
                  f"{ms - at_measured:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
