"""Which GEMM/conv calls of imported models a GPU target runs on plain fallback kernels.

    python bench/plain_kernels.py torchvision.models:regnet_x_8gf torchvision.models:vgg16_bn \
        [--target h200] [--out DIR] [--input x:batch,3,224,224] [--dim batch=1:64:8]

Imports each MODULE:FACTORY as a user would (`ait-build import torch`, random weights, into
--out), plans its float16 copy for --target and prints a line per model: its step count and the
build's notes on calls that run plain kernels (the direct conv, the tiled GEMM) and on
attention left unfused, or `no plain kernels`. No GPU
or compiler is needed: it is how the fallbacks of this stop were found (docs/benchmarks.md,
"Models outside the public benchmark (GPU)"). A factory that does not import says why.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from ait_build.bench.run import dtype_variant  # noqa: E402
from ait_build.codegen.emit import plain_summary, unfused_attention  # noqa: E402
from ait_build.errors import AitError  # noqa: E402
from ait_build.pipeline import build_plan, find_target  # noqa: E402


def imported(factory: str, out: str, inputs: list, dims: list) -> str:
    """The spec `ait-build import torch` writes for `factory` (kept from an earlier run)."""
    spec = os.path.join(out, factory.rpartition(":")[2] + ".yaml")
    if not os.path.exists(spec):
        args = [a for i in inputs for a in ("--input", i)] + [a for d in dims for a in ("--dim", d)]
        proc = subprocess.run([sys.executable, "-m", "ait_build", "import", "torch", factory,
                               *args, "-o", spec], capture_output=True, text=True, cwd=REPO)
        if proc.returncode:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            raise AitError(lines[-1] if lines else f"import exited with {proc.returncode}")
    return spec


def scan(spec: str, target: str, root: str) -> str:
    """'<steps> steps; <the plain-kernel line, or none>' of the float16 copy of `spec`."""
    plan = build_plan(dtype_variant(spec, "float16", root), find_target(target))
    unfused = unfused_attention(plan)
    return f"{len(plan.steps)} steps; {plain_summary(plan.plain) or 'no plain kernels'}" + \
        (f"; {unfused}" if unfused else "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("factories", nargs="+", help="MODULE:FACTORY, e.g. torchvision.models:vgg16_bn")
    p.add_argument("--target", default="h200")
    p.add_argument("--out", default=os.path.join(REPO, "build", "plain_kernels"))
    p.add_argument("--input", action="append", help="as `ait-build import` takes it "
                   "(default: x:batch,3,224,224)")
    p.add_argument("--dim", action="append", default=[], help="as `ait-build import` takes it")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for factory in args.factories:
        name = factory.rpartition(":")[2]
        try:
            spec = imported(factory, args.out, args.input or ["x:batch,3,224,224"], args.dim)
            print(f"{name}: {scan(spec, args.target, args.out)}", flush=True)
        except AitError as exc:
            print(f"{name}: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
