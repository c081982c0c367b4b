"""`ait-build import torch MODULE:FACTORY ...` and `ait-build import onnx MODEL.onnx ...` (a row of
cli/commands.py)."""

from __future__ import annotations

import argparse
import os
import sys

from ait_build.errors import AitError
from ait_build.importers.write import check_outputs
from ait_build.spec.names import MODEL_NAME

DTYPES = ("float32", "float16", "bfloat16")
DESCRIPTION = ("Translate a PyTorch module (through torch.export) or an ONNX file into a model spec "
               "and a safetensors file with the source's weight names. Repeated structure becomes "
               "blocks with repeat; dims named in --input become the spec's dims. When some "
               "operations have no translation, every one of them is listed with its place in the "
               "source and nothing is written.")
EXAMPLES = ["ait-build import torch torchvision.models:resnet50 --input x:batch,3,224,224 "
            "-o specs/resnet50.yaml",
            "ait-build import onnx model.onnx --dim batch=1:32 -o specs/model.yaml"]


def _common(p) -> None:
    p.add_argument("-o", "--output", required=True, metavar="SPEC",
                   help="the spec to write, e.g. specs/resnet50.yaml; the weights go next to it "
                        "as SPEC's name with .safetensors")
    p.add_argument("--input", action="append", default=[], metavar="NAME:SHAPE[:DTYPE]",
                   help="an input (repeatable, in the model's order); sizes are integers or dim "
                        "names, e.g. image:batch,3,224,224 or input_ids:batch,seq:int64 (a float "
                        "input takes --dtype)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=MIN:MAX[:OPT]",
                   help="the range of a dim the inputs name (default 1:64, opt 8), e.g. "
                        "--dim seq=1:512:128")
    p.add_argument("--name", help="the model's name (default: the spec file's name)")
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="the spec's dtype: float tensors of the source become this "
                        "(default: float32)")
    p.add_argument("--flat", action="store_true",
                   help="write every node out, without folding repeated structure into blocks")


def add_arguments(p) -> None:
    sources = p.add_subparsers(dest="source", required=True, metavar="SOURCE",
                               help="torch (a PyTorch module from a factory) or onnx (a file)")
    t = sources.add_parser("torch", help="a torch.nn.Module from a factory function",
                           description="Import MODULE:FACTORY: the factory (a function or "
                           "class) is called with --args and must return a torch.nn.Module.",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("factory", metavar="MODULE:FACTORY",
                   help="e.g. torchvision.models:resnet50 or mypkg.models:build")
    t.add_argument("--args", metavar="JSON", help="keyword arguments of the factory as a JSON "
                   "object, e.g. '{\"num_classes\": 10}'")
    _common(t)
    o = sources.add_parser("onnx", help="an ONNX model file",
                           description="Import an ONNX model; initializers become weights under "
                           "their own names. --input NAME:SHAPE names the dims of an input "
                           "whose sizes the file leaves symbolic.",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    o.add_argument("model", metavar="MODEL.onnx", help="the ONNX file")
    _common(o)


def run(args) -> int:
    check_outputs(args.output, [getattr(args, "model", None)])  # before the import, not after
    return {"torch": cmd_import_torch, "onnx": cmd_import_onnx}[args.source](args)


def _name(args) -> str:
    name = args.name or os.path.splitext(os.path.basename(args.output))[0]
    if not MODEL_NAME.fullmatch(name):
        raise AitError(f"model name '{name}' may only hold ASCII letters, digits, '_' and '-' "
                       "(give --name)")
    return name


def _say(text: str) -> None:
    print(f"import: {text}", file=sys.stderr, flush=True)


def _finish(graph, args, description: str, source) -> int:
    """Writes the spec, its weights and its `source:` field (`source(args, graph, spec)`)."""
    from ait_build.importers.simplify import simplify
    from ait_build.importers.source import record_source
    from ait_build.importers.write import write_spec
    _say(f"simplifying {len(graph.nodes)} nodes")
    simplify(graph)
    _say("writing the spec" if args.flat else
         "folding repeated structure into blocks and writing the spec")
    spec, weights, built = write_spec(graph, args.output, description, fold=not args.flat,
                                      source=getattr(args, "model", None) or args.factory)
    record_source(spec, source(args, graph, spec))
    print(f"wrote {spec} ({len(built.nodes)} nodes) and {weights} ({len(graph.weights)} tensors)",
          file=sys.stderr)
    return 0


def cmd_import_torch(args) -> int:
    from ait_build.importers.from_torch import import_torch
    from ait_build.importers.options import dims_for, parse_dim, parse_input, unique
    _require("torch", "pip install \"ait-build[torch]\"")
    inputs = unique([parse_input(text) for text in args.input], "--input")
    if not inputs:
        raise AitError("give at least one --input NAME:SHAPE[:DTYPE]")
    dims = dims_for(inputs, unique([parse_dim(text) for text in args.dim], "--dim"))
    graph = import_torch(args.factory, args.args, inputs, dims, _name(args), args.dtype, _say)
    from ait_build.importers.source import torch_source
    return _finish(graph, args, f"Imported from PyTorch {args.factory} by ait-build import.",
                   torch_source)


def cmd_import_onnx(args) -> int:
    from ait_build.importers.from_onnx import import_onnx
    from ait_build.importers.options import parse_dim, parse_input, unique
    _require("onnx", "pip install \"ait-build[onnx]\"")
    inputs = unique([parse_input(text) for text in args.input], "--input")
    dims = unique([parse_dim(text) for text in args.dim], "--dim")
    graph = import_onnx(args.model, inputs, dims, _name(args), args.dtype, _say)
    from ait_build.importers.source import onnx_source
    return _finish(graph, args, f"Imported from ONNX {os.path.basename(args.model)} by "
                                "ait-build import.", onnx_source)


def _require(module: str, how: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise AitError(f"importing from {module} needs the '{module}' package: {how}") from None
