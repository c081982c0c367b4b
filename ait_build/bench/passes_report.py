"""The optimizer's numbers for the seed models, as the markdown tables in docs/passes.md:

    python -m ait_build.bench.passes_report [--target cpu] [--specs specs]

Per model: nodes and unique kernels before and after the pipeline, and the planned workspace
against the naive sum (one buffer per intermediate) at the largest dims, or at the dims given
(BERT-base also at seq 128). Op counts before and after follow in a second table.
"""

from __future__ import annotations

import argparse
import os
import sys

from ait_build.passes import optimize
from ait_build.passes.kernel_signatures import unique_kernels
from ait_build.passes.plan_memory import plan
from ait_build.pipeline import find_target
from ait_build.spec.model import load_model

# (label, spec file stem, dims that replace the max)
CASES = (
    ("ResNet-50", "resnet50", {}),
    ("BERT-base", "bert_base", {"seq": 128}),
    ("BERT-base", "bert_base", {}),
    ("ViT-B/16", "vit_b16", {}),
)


def gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def measure(path: str, target, dims: dict) -> dict:
    graph = load_model(path)
    after, _ = optimize(graph, target)
    env = dict(graph.bounds_env("max"), **dims)
    before_plan, after_plan = plan(graph, env), plan(after, env)
    return {
        "dims": ", ".join(f"{k} {v}" for k, v in env.items()),
        "nodes": (len(graph.nodes), len(after.nodes)),
        "kernels": (unique_kernels(graph), unique_kernels(after)),
        "ops": (graph.op_counts(), after.op_counts()),
        "workspace": after_plan.workspace_bytes, "naive": after_plan.naive_bytes,
        "peak": after_plan.peak_bytes, "naive_before": before_plan.naive_bytes,
        "dtype": graph.dtype,
    }


def _counts(counts: dict) -> str:
    return ", ".join(f"{op} {n}" for op, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def tables(rows: list) -> str:
    out = ["| model | dims | nodes before -> after | unique kernels before -> after | "
           "planned workspace | naive sum (optimized graph) | live peak | naive sum (spec graph) |",
           "|---|---|---|---|---|---|---|---|"]
    for label, m in rows:
        out.append(f"| {label} ({m['dtype']}) | {m['dims']} | {m['nodes'][0]} -> {m['nodes'][1]} | "
                   f"{m['kernels'][0]} -> {m['kernels'][1]} | {gib(m['workspace'])} | "
                   f"{gib(m['naive'])} | {gib(m['peak'])} | {gib(m['naive_before'])} |")
    out += ["", "| model | ops before | ops after |", "|---|---|---|"]
    seen = set()
    for label, m in rows:
        if label not in seen:
            seen.add(label)
            out.append(f"| {label} | {_counts(m['ops'][0])} | {_counts(m['ops'][1])} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(prog="python -m ait_build.bench.passes_report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--specs", default=os.path.join(root, "specs"))
    args = parser.parse_args(argv)
    target = find_target(args.target)
    rows, missing = [], []
    for label, stem, dims in CASES:
        path = os.path.join(args.specs, stem + ".yaml")
        if not os.path.exists(path):
            missing.append(stem)
            continue
        rows.append((label, measure(path, target, dims)))
    sys.stdout.write(f"target {args.target}\n\n" + tables(rows))
    for stem in sorted(set(missing)):
        sys.stdout.write(f"\n(specs/{stem}.yaml does not exist yet)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
