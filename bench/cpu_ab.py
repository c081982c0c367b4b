"""A/B of cpu libraries, or of one library under different environment settings, taking turns
run by run in one process so that every side sees the same load.

Each side is a build folder, optionally followed by `:NAME=VALUE,...`: the variables are set
while that side's model handle is created, then unset for the next side (the library reads
AIT_NUM_THREADS, AIT_PACK_WEIGHTS and AIT_CPU_GEMM at create). Every run goes through the
library's time_steps() entry (bench/cpu_layers.py); per side it prints the median and minimum of
the whole run, the sum of each step's minimum, and those minimums summed per kernel kind.

    python bench/cpu_ab.py build/cpu_mkl/bert_base_float32 \
        build/cpu_mkl/bert_base_float32:AIT_PACK_WEIGHTS=0 --batch 1 --dim seq=128 --runs 10
    python bench/cpu_ab.py build/cpu_mkl/resnet50_float32 build/cpu_mkl/resnet50 --batch 8
    python bench/cpu_ab.py B B:AIT_PACK_WEIGHTS=0 --nodes    # each node's minimums side by side
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_layers import Library  # noqa: E402

from ait_build.runtime.settings import environment  # noqa: E402


def side(arg: str, dims: dict) -> Library:
    """The side's library, its handle created under its settings; the environment is restored
    after, so that a later side sees none of them."""
    build, _, settings = arg.partition(":")
    with environment(dict(item.partition("=")[::2] for item in filter(None, settings.split(",")))):
        return Library(build, dims)


def summary(name: str, lib: Library) -> str:
    totals = [sum(run) for run in lib.runs]
    kinds = collections.defaultdict(float)
    for i, step in enumerate(lib.manifest["steps"]):
        kinds[step["kernel"].rsplit("_", 1)[0]] += min(run[i] for run in lib.runs)
    by_kind = ", ".join(f"{k} {v:.2f}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return (f"{name}: median {statistics.median(totals):.2f} ms, min {min(totals):.2f}, "
            f"sum of step minimums {sum(kinds.values()):.2f}\n    {by_kind}")


def node_table(libs: list) -> str:
    """Each graph node's minimum per side (ms) and the first side's over the second's, nodes
    matched by name (a node one side runs no step for shows `-` there)."""
    tables = [{node: rest for node, *rest in lib.nodes()} for lib in libs]
    order = [node for node, *_ in libs[0].nodes()]
    order += [node for t in tables[1:] for node in t if node not in order]
    lines = []
    for node in order:
        kernel = next(t[node][0][0] for t in tables if node in t)
        mins = [t[node][1] if node in t else None for t in tables]
        ratio = f"  {mins[0] / mins[1]:.2f}" if len(mins) > 1 and mins[0] and mins[1] else ""
        cells = " ".join(f"{v:8.3f}" if v is not None else f"{'-':>8s}" for v in mins)
        lines.append(f"{node:34s} {kernel:34s} {cells}{ratio}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sides", nargs="+", help="BUILD_DIR[:NAME=VALUE,...]")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--nodes", action="store_true", help="also each node's minimum per side")
    args = ap.parse_args(argv)
    dims = dict(batch=args.batch, **{k: int(v) for k, v in (d.split("=") for d in args.dim)})
    libs = [side(arg, dims) for arg in args.sides]
    for i in range(args.runs + 2):  # two untimed turns first (the first run packs weights)
        for lib in libs:
            lib.run(keep=i >= 2)
    for arg, lib in zip(args.sides, libs):
        print(summary(arg, lib))
    if args.nodes:
        print(node_table(libs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
