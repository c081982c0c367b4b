"""`ait-build graph`: a model's graph as written, or as the passes leave it for a target."""

from __future__ import annotations

import os
import sys

from ait_build.cli import graph_view
from ait_build.cli.args import add_spec_argument, add_target_argument
from ait_build.errors import AitError
from ait_build.files.output import check_output, write_output
from ait_build.ir.resources import project_spec
from ait_build.passes import optimize, pass_names
from ait_build.pipeline import find_target, summarize
from ait_build.spec.model import load_model

DESCRIPTION = "Print a model's graph as written, or as the passes leave it for a target."
EXAMPLES = ["ait-build graph specs/resnet50.yaml --target cpu",
            "ait-build graph specs/bert_base.yaml --target h200 --stage fuse_attention "
            "--format json",
            "ait-build graph specs/mlp.yaml --format svg -o mlp.svg"]
BINARY_FORMATS = ("png",)  # not written to a terminal (svg, dot and json are text)


def add_arguments(p) -> None:
    add_spec_argument(p)
    add_target_argument(p, default=None, purpose="optimize the graph for this target", paths=True)
    p.add_argument("--stage", help="stop after this pass ('none' = before any pass), e.g. "
                   "--stage fuse_epilogue")
    p.add_argument("--format", choices=["text", "json", "dot", "svg", "png"],
                   help="output format (default: the one -o's extension names, .json, .dot, .gv, "
                   ".svg or .png, else text; svg/png need Graphviz; png goes to -o FILE or a "
                   "redirected stdout, never a terminal)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to this file instead of stdout "
                   "(-: stdout)")


# the formats a file name's extension names: `-o g.png` wrote the text listing into g.png
EXTENSION_FORMATS = {".json": "json", ".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png"}


def output_format(given: str | None, output: str | None) -> str:
    """--format, else the format -o's extension names, else text; a format other than the one
    the extension names is an error (an SVG in a .png file opens nowhere)."""
    named = EXTENSION_FORMATS.get(os.path.splitext(output or "")[1].lower())
    if given and named and given != named:
        raise AitError(f"-o {output} names a {named} file, but --format {given} writes {given}; "
                       f"give --format {named}, or a file name for {given}")
    return given or named or "text"


def run(args) -> int:
    spec = project_spec(args.spec)
    if args.output == "-":  # the usual name of stdout, not a file called '-'
        args.output = None
    args.format = output_format(args.format, args.output)
    if args.output:  # before the work, not after it
        check_output(args.output, [spec])
    elif args.format in BINARY_FORMATS and sys.stdout.isatty():
        raise AitError(f"--format {args.format} writes binary data, not for a terminal; give -o "
                       "FILE (or redirect stdout to a file or pipe)")
    graph = load_model(spec)
    extra = {}
    if args.target:
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
    else:
        sys.stdout.buffer.write(out)
    return 0


def _plan_summary(graph, target, report, fmt) -> dict:
    """Passes applied plus, when the planner exists, unique kernels and workspace bytes."""
    extra = {"passes": [{"name": n, "changed": s} for n, s in report]} if fmt == "json" else \
        {"passes": "; ".join(f"{n}: {s}" for n, s in report if s) or "none changed the graph"}
    extra.update(summarize(graph, target))
    return extra
