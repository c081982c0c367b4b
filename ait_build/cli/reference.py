"""`ait-build reference`: a spec run by the NumPy reference executor."""

from __future__ import annotations

import os
import sys

from ait_build.cli.args import add_input_arguments, add_spec_argument, dims_of
from ait_build.cli.run import describe
from ait_build.errors import AitError
from ait_build.files.output import check_output, write_output
from ait_build.ir.dtypes import dtype_mismatch
from ait_build.ir.resources import project_spec
from ait_build.ir.weights import safetensors_bytes
from ait_build.ops.reference import ProgressLine, random_inputs, run_reference
from ait_build.runtime.inputs import load_arrays
from ait_build.spec.model import load_model

DESCRIPTION = ("Run a spec with the NumPy reference executor (the oracle every backend is checked "
               "against) and print each output's statistics.")
EXAMPLES = ["ait-build reference specs/mlp.yaml --random-input --batch 4",
            "ait-build reference specs/tiny_bert.yaml --inputs in.safetensors -o out.safetensors",
            "ait-build reference specs/tiny_cnn.yaml --random-input --intermediates "
            "all.safetensors"]


def add_arguments(p) -> None:
    add_spec_argument(p)
    add_input_arguments(p)
    p.add_argument("--weights", metavar="FILE", help="a safetensors file replacing the spec's "
                   "weights")
    p.add_argument("-o", "--output", metavar="FILE", help="write outputs to a safetensors file")
    p.add_argument("--intermediates", metavar="FILE", help="write every tensor the graph "
                   "computes (inputs too), named as in `ait-build graph`, to a safetensors file: "
                   "compare them with the source model's while porting")


def _device(path: str) -> bool:
    """/dev/null and the like, which both files may be written to."""
    return os.path.exists(path) and not os.path.isfile(path)


def run(args) -> int:
    spec = project_spec(args.spec)
    if args.output and args.intermediates and os.path.realpath(args.output) == \
            os.path.realpath(args.intermediates) and not _device(args.output):
        raise AitError(f"-o and --intermediates name the same file, {args.output}: the "
                       "intermediates would replace the outputs; give two names")
    for path in (args.output, args.intermediates):
        if path:  # before the work, not after it
            check_output(path, [spec, args.weights, args.inputs])
    graph = load_model(spec, args.weights)
    dims = dims_of(args.dim, args.batch)
    if args.inputs:
        inputs = load_arrays(args.inputs)
        for name in graph.inputs:  # as `run` refuses them: no silent cast (of float indices...)
            problem = name in inputs and dtype_mismatch(f"input '{name}'", inputs[name].dtype,
                                                        graph.tensors[name].dtype)
            if problem:
                raise AitError(problem)
    elif args.random_input:
        inputs = random_inputs(graph, dims, seed=args.seed)
    else:
        raise AitError("give --random-input or --inputs FILE.safetensors")
    values = run_reference(graph, inputs, keep_all=bool(args.intermediates),
                           progress=ProgressLine(), dims=dims)
    outputs = {name: values[name] for name in graph.outputs}
    for name, arr in outputs.items():
        print(describe(name, arr))
    if args.output:
        write_output(args.output, safetensors_bytes(outputs))
        print(f"wrote {args.output}", file=sys.stderr)
    if args.intermediates:
        write_output(args.intermediates, safetensors_bytes(values))
        print(f"wrote {len(values)} tensors to {args.intermediates}", file=sys.stderr)
    return 0
