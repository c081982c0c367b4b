"""The `ait-build` command. Every user-facing failure is an AitError printed as one located line
(`PATH:LINE:COL: error: ...`) with exit status 1; set AIT_BUILD_DEBUG=1 for tracebacks."""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

import numpy as np

from ait_build.cli_args import (OneLineParser, check_output_path, dim_value, dims_of,
                                nonnegative_int, positive_int, write_output)
from ait_build.errors import AitError, format_error


def _load(path, weights=None):
    from ait_build.spec.model import load_model
    return load_model(path, weights)


def cmd_check(args) -> int:
    """Check every file (a model, target or blocks file, by its `kind`); exit 1 if any fails."""
    from ait_build.spec.check import check_spec
    failed = 0
    for path in args.specs:
        try:
            print(f"{path}: {check_spec(path)}")
        except AitError as exc:
            print(format_error(exc), file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def cmd_graph(args) -> int:
    from ait_build import graph_view
    graph = _load(args.spec)
    extra = {}
    if args.target:
        from ait_build.passes import optimize, pass_names
        from ait_build.spec.target import find_target
        target = find_target(args.target)
        if args.stage and args.stage not in pass_names() + ["none"]:
            raise AitError(f"unknown stage '{args.stage}'; stages: none, " + ", ".join(pass_names()))
        graph, report = optimize(graph, target, stop_after=args.stage)
        extra = _plan_summary(graph, target, report, args.format)
    elif args.stage:
        raise AitError("--stage needs --target (passes depend on the target)")
    if args.format == "text":
        out = graph_view.to_text(graph, extra).encode()
    elif args.format == "json":
        out = graph_view.to_json(graph, extra).encode()
    elif args.format == "dot":
        out = graph_view.to_dot(graph).encode()
    else:
        out = graph_view.render_image(graph_view.to_dot(graph), args.format)
    if args.output:
        write_output(args.output, out)
        print(f"wrote {args.output}", file=sys.stderr)
    elif args.format in ("svg", "png") and sys.stdout.isatty():
        raise AitError(f"--format {args.format} writes binary data; give -o FILE")
    else:
        sys.stdout.buffer.write(out)
    return 0


def _plan_summary(graph, target, report, fmt) -> dict:
    """Passes applied plus, when the planner exists, unique kernels and workspace bytes."""
    extra = {"passes": [{"name": n, "changed": s} for n, s in report]} if fmt == "json" else \
        {"passes": "; ".join(f"{n}: {s}" for n, s in report if s) or "none changed the graph"}
    try:
        from ait_build.codegen.plan import summarize
    except ImportError:  # the optimizer's own counts until codegen provides its plan
        from ait_build.passes.summary import summarize
    extra.update(summarize(graph, target))
    return extra


def cmd_reference(args) -> int:
    from ait_build.reference import random_inputs, run_reference
    graph = _load(args.spec, args.weights)
    dims = dims_of(args.dim, args.batch)
    if args.output:
        check_output_path(args.output)  # before the work, not after it
    if args.inputs:
        inputs = _load_arrays(args.inputs)
    elif args.random_input:
        inputs = random_inputs(graph, dims, seed=args.seed)
    else:
        raise AitError("give --random-input or --inputs FILE.safetensors")
    outputs = run_reference(graph, inputs)
    for name, arr in outputs.items():
        flat = arr.astype(np.float64).ravel()
        print(f"{name}: {arr.dtype}{list(arr.shape)} mean={flat.mean():.6g} std={flat.std():.6g} "
              f"first={np.array2string(flat[:4], precision=5)}")
    if args.output:
        from ait_build.weights import save_safetensors
        save_safetensors(outputs, args.output)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _load_arrays(path) -> dict:
    from safetensors.numpy import load_file
    if not os.path.isfile(path):  # a FIFO or a device would block or never end
        raise AitError(f"{path}: not a regular file" if os.path.exists(path) else f"{path}: not found")
    try:
        return load_file(path)
    except Exception as exc:
        raise AitError(f"{path}: cannot read safetensors file: {exc}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="ait-build", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="validate model and target specs")
    p.add_argument("specs", nargs="+")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("graph", help="show a model's graph (optimized for a target with --target)")
    p.add_argument("spec")
    p.add_argument("--target", help="optimize for this target (name or path)")
    p.add_argument("--stage", help="stop after this pass ('none' = before any pass)")
    p.add_argument("--format", default="text", choices=["text", "json", "dot", "svg", "png"])
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("reference", help="run the NumPy reference executor")
    p.add_argument("spec")
    p.add_argument("--random-input", action="store_true", help="random inputs at each dim's opt")
    p.add_argument("--inputs", help="inputs from a safetensors file")
    p.add_argument("--batch", type=positive_int, help="value of the 'batch' dim")
    p.add_argument("--dim", action="append", type=dim_value, help="NAME=VALUE for a dim (repeatable)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    p.add_argument("--weights", help="a safetensors file replacing the spec's weights")
    p.add_argument("-o", "--output", help="write outputs to a safetensors file")
    p.set_defaults(func=cmd_reference)

    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands():
    """Commands that live beside their subsystem (build/run/bench/profile), where present."""
    found = []
    for module in ("ait_build.build_cli", "ait_build.bench", "ait_build.profile.cli"):
        try:
            mod = __import__(module, fromlist=["register"])
        except ImportError:
            continue
        found.append(mod.register)
    return found


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except AitError as exc:
        print(format_error(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `ait-build check ... | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception:  # a bug in ait-build, not in the user's input
        if os.environ.get("AIT_BUILD_DEBUG"):
            traceback.print_exc()
        else:
            exc = sys.exc_info()[1]
            print(f"internal error: {type(exc).__name__}: {exc} (set AIT_BUILD_DEBUG=1 for the "
                  "traceback, and please report it)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
