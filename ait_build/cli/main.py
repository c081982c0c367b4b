"""The `ait-build` command. Exit status: 0 done, 1 the user's input is wrong (an AitError, printed
as `PATH:LINE:COL: error: ...` or `error: ...`), 2 a usage error (argparse), 3 an internal error
(a bug in ait-build: one line that says so and asks for a report; AIT_BUILD_DEBUG=1 shows the
traceback)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import traceback

import numpy as np

from ait_build import __version__
from ait_build.cli.args import (OneLineParser, check_output_path, dim_value, dims_of,
                                nonnegative_int, positive_int, write_output)
from ait_build.errors import AitError, format_error

EXIT_USER_ERROR, EXIT_INTERNAL_ERROR = 1, 3
DESCRIPTION = ("A declarative model compiler: YAML model and target specs become fused C++/CUDA "
               "kernels, built by SCons into one shared library per model and target.")
EPILOG = """examples:
  ait-build init demo                              # a new project: SConstruct, specs/, targets/
  ait-build check specs/mlp.yaml                   # validate a spec
  ait-build build specs/mlp.yaml --target cpu      # build/cpu/mlp/libmlp.so
  ait-build run build/cpu/mlp --random-input --check

exit status: 0 done, 1 error in the input, 2 usage error, 3 internal error (please report it)
'ait-build COMMAND -h' describes a command."""


def add_command(sub, name: str, summary: str, description: str, examples: list):
    """A subcommand whose -h shows its description and examples (every command has both)."""
    return sub.add_parser(name, help=summary, description=textwrap.fill(description, 79),
                          epilog="examples:\n" + "\n".join(f"  {e}" for e in examples),
                          formatter_class=argparse.RawDescriptionHelpFormatter)


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
    from ait_build.cli import graph_view
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
    from ait_build.pipeline import summarize
    extra.update(summarize(graph, target))
    return extra


def cmd_reference(args) -> int:
    from ait_build.ops.reference import ProgressLine, random_inputs, run_reference
    graph = _load(args.spec, args.weights)
    dims = dims_of(args.dim, args.batch)
    for path in (args.output, args.intermediates):
        if path:
            check_output_path(path)  # before the work, not after it
    if args.inputs:
        inputs = load_arrays(args.inputs)
    elif args.random_input:
        inputs = random_inputs(graph, dims, seed=args.seed)
    else:
        raise AitError("give --random-input or --inputs FILE.safetensors")
    values = run_reference(graph, inputs, keep_all=bool(args.intermediates),
                           progress=ProgressLine())
    outputs = {name: values[name] for name in graph.outputs}
    for name, arr in outputs.items():
        flat = arr.astype(np.float64).ravel()
        print(f"{name}: {arr.dtype}{list(arr.shape)} mean={flat.mean():.6g} std={flat.std():.6g} "
              f"first={np.array2string(flat[:4], precision=5)}")
    if args.output:
        from ait_build.ir.weights import save_safetensors
        save_safetensors(outputs, args.output)
        print(f"wrote {args.output}", file=sys.stderr)
    if args.intermediates:
        from ait_build.ir.weights import save_safetensors
        save_safetensors(values, args.intermediates)
        print(f"wrote {len(values)} tensors to {args.intermediates}", file=sys.stderr)
    return 0


def load_arrays(path) -> dict:
    from safetensors.numpy import load_file
    from ait_build.files.read import check_regular
    try:
        check_regular(path)  # a FIFO or a device would block or never end
    except FileNotFoundError:
        raise AitError(f"{path}: not found") from None
    except OSError as exc:
        raise AitError(f"{path}: {exc.strerror}") from None
    try:
        return load_file(path)
    except Exception as exc:
        raise AitError(f"{path}: cannot read safetensors file: {exc}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="ait-build", description=textwrap.fill(DESCRIPTION, 79),
                           epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ait-build {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = add_command(sub, "check", "validate model and target specs",
                    "Validate model, target and blocks files (each by its `kind`); errors point "
                    "at PATH:LINE:COL.", ["ait-build check specs/*.yaml targets/h200.yaml"])
    p.add_argument("specs", nargs="+", metavar="SPEC", help="spec files, e.g. specs/mlp.yaml")
    p.set_defaults(func=cmd_check)

    p = add_command(sub, "graph", "show a model's graph (optimized for a target with --target)",
                    "Print a model's graph as written, or as the passes leave it for a target.",
                    ["ait-build graph specs/resnet50.yaml --target cpu",
                     "ait-build graph specs/bert_base.yaml --target h200 --stage fuse_attention "
                     "--format json",
                     "ait-build graph specs/mlp.yaml --format svg -o mlp.svg"])
    p.add_argument("spec", help="model spec file, e.g. specs/mlp.yaml")
    p.add_argument("--target", help="optimize for this target (a name from `ait-build targets` "
                   "or a path), e.g. --target cpu")
    p.add_argument("--stage", help="stop after this pass ('none' = before any pass), e.g. "
                   "--stage fuse_epilogue")
    p.add_argument("--format", default="text", choices=["text", "json", "dot", "svg", "png"],
                   help="output format (default: text; svg/png need Graphviz and -o)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to this file instead of stdout")
    p.set_defaults(func=cmd_graph)

    p = add_command(sub, "reference", "run the NumPy reference executor",
                    "Run a spec with the NumPy reference executor (the oracle every backend is "
                    "checked against) and print each output's statistics.",
                    ["ait-build reference specs/mlp.yaml --random-input --batch 4",
                     "ait-build reference specs/tiny_bert.yaml --inputs in.safetensors -o "
                     "out.safetensors",
                     "ait-build reference specs/tiny_cnn.yaml --random-input --intermediates "
                     "all.safetensors"])
    p.add_argument("spec", help="model spec file, e.g. specs/mlp.yaml")
    p.add_argument("--random-input", action="store_true", help="random inputs at each dim's opt")
    p.add_argument("--inputs", metavar="FILE", help="inputs from a safetensors file")
    p.add_argument("--batch", type=positive_int, help="value of the 'batch' dim, e.g. --batch 4")
    p.add_argument("--dim", action="append", type=dim_value, metavar="NAME=VALUE",
                   help="a dim's value (repeatable), e.g. --dim seq=64")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the random inputs (default: 0)")
    p.add_argument("--weights", metavar="FILE", help="a safetensors file replacing the spec's "
                   "weights")
    p.add_argument("-o", "--output", metavar="FILE", help="write outputs to a safetensors file")
    p.add_argument("--intermediates", metavar="FILE", help="write every tensor the graph "
                   "computes (inputs too), named as in `ait-build graph`, to a safetensors file: "
                   "compare them with the source model's while porting")
    p.set_defaults(func=cmd_reference)

    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands():
    """Commands that live beside their subsystem (build/run/bench/profile), where present."""
    found = []
    for module in ("ait_build.cli.build", "ait_build.bench.run", "ait_build.profile.cli",
                   "ait_build.cli.project", "ait_build.importers.cli"):
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
        return EXIT_USER_ERROR
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
            print(f"internal error: {type(exc).__name__}: {exc} (a bug in ait-build: please "
                  "report it, with the output of AIT_BUILD_DEBUG=1 and the command)",
                  file=sys.stderr)
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
