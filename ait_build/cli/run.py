"""`ait-build run`: a built library on random or given inputs, optionally checked against the
NumPy reference executor."""

from __future__ import annotations

import os
import sys

import numpy as np

from ait_build.cli.args import add_input_arguments, dims_of, nonnegative_int
from ait_build.errors import AitError
from ait_build.files.output import check_output, write_output
from ait_build.ir.resources import project_spec
from ait_build.ir.weights import safetensors_bytes
from ait_build.ops.reference import ProgressLine, run_reference
from ait_build.runtime import Model
from ait_build.runtime.inputs import load_arrays, make_inputs
from ait_build.spec.model import load_model

DESCRIPTION = ("Run a built model and print each output's statistics; --check compares them with "
               "the NumPy reference executor (exit 1 past the tolerance).")
EXAMPLES = ["ait-build run build/cpu/mlp --random-input --check",
            "ait-build run build/cpu/tiny_bert --random-input --dim seq=32 -o out.safetensors",
            "ait-build run build/h200/mlp --random-input --device 1"]


def add_arguments(p) -> None:
    p.add_argument("build_dir", help="a build folder, e.g. build/cpu/mlp")
    add_input_arguments(p)
    p.add_argument("--check", action="store_true", help="compare with the NumPy reference executor")
    p.add_argument("--spec", help="the model's spec for --check: a file, or a model name under "
                   "specs/ (default: specs/<model>.yaml of the project)")
    p.add_argument("-o", "--output", metavar="FILE", help="write outputs to a safetensors file")
    p.add_argument("--device", type=nonnegative_int, metavar="N", help="the GPU a cuda or rocm "
                   "build runs on (default: the current device, normally 0)")


def run(args) -> int:
    dims = dims_of(args.dim, args.batch)
    if args.output:  # before the work, not after it; the build folder's files are inputs too
        check_output(args.output, [args.inputs, args.spec, *_files_in(args.build_dir)])
    with Model(args.build_dir, device=args.device) as model:
        spec = find_spec(model.manifest, args.spec)
        graph = None
        if spec and (args.check or args.random_input):
            graph = load_model(spec)
            try:
                check_same_model(graph, model.manifest, spec)
            except AitError:
                if args.check:
                    raise
                graph = None  # random inputs come from the manifest alone
        if args.inputs:
            inputs = load_arrays(args.inputs)
        elif args.random_input:
            inputs = make_inputs(model.manifest, graph, dims, args.seed)
        else:
            raise AitError("give --random-input or --inputs FILE.safetensors")
        outputs = model.run(inputs, dims=dims)
        for name, arr in outputs.items():
            print(describe(name, arr))
        if args.output:
            write_output(args.output, safetensors_bytes(outputs))
            print(f"wrote {args.output}", file=sys.stderr)
        if not args.check:
            return 0
        if graph is None:
            raise AitError(f"--check needs the spec: give --spec (looked for specs/{model.name}.yaml)")
        reference = run_reference(graph, inputs, progress=ProgressLine(), dims=dims)
        lines = compare(outputs, reference, model.manifest.raw.get("dtype", "float32"))
        print("\n".join(lines))
        if not any(line.endswith("MISMATCH") for line in lines):
            return 0
        if _changed_after_build(spec, model.build_dir):  # the likeliest cause, so say it
            print(f"note: {spec} changed after {model.build_dir} was built; the check compares "
                  f"with the spec as it is now: build it again", file=sys.stderr)
        return 1


def _changed_after_build(spec: str, build_dir: str) -> bool:
    """Whether the spec file was written after the build's manifest."""
    try:
        return os.path.getmtime(spec) > os.path.getmtime(os.path.join(build_dir, "manifest.json"))
    except OSError:
        return False



def _files_in(folder: str) -> list:
    try:
        return [os.path.join(folder, name) for name in os.listdir(folder)]
    except OSError:
        return []  # Model() says what is wrong with the folder


def find_spec(manifest, given: str | None) -> str | None:
    """The spec a build came from: `given` (a file or a model name), else specs/<name>.yaml of
    the project, if any."""
    if given:
        return project_spec(given)
    try:
        path = project_spec(manifest.name)
    except AitError:
        return None
    return path if os.path.isfile(path) else None


def describe(name: str, arr: np.ndarray) -> str:
    flat = arr.astype(np.float64).ravel()
    with np.errstate(all="ignore"):  # inf and -inf average to nan, without a warning
        stats = f"mean={flat.mean():.6g} std={flat.std():.6g}" if flat.size else "empty"
    return f"{name}: {arr.dtype}{list(arr.shape)} {stats} first={np.array2string(flat[:4], precision=5)}"


def tolerance(dtype: str) -> tuple:
    """(rtol, atol) for --check: float32 computes in float32; 16-bit models store 16-bit values."""
    return (1e-3, 1e-4) if dtype == "float32" else (2e-2, 2e-2)


def compare(ours: dict, ref: dict, dtype: str) -> list:
    """Lines describing each output's agreement with the reference; 'MISMATCH' marks failures.
    NaN agrees with NaN and an infinity with itself (the reference computes them too)."""
    rtol, atol = tolerance(dtype)
    lines = []
    for name, want in ref.items():
        got = ours[name].astype(np.float32)
        want = want.astype(np.float32)
        if got.shape != want.shape:
            lines.append(f"check {name}: shape {list(got.shape)}, the reference's "
                         f"{list(want.shape)} MISMATCH")
            continue
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        with np.errstate(invalid="ignore"):
            err = float(np.max(np.where(same, 0.0, np.abs(got - want)))) if got.size else 0.0
        ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        lines.append(f"check {name}: max |ours - reference| = {err:.3g} (rtol {rtol}, atol {atol}) "
                     + ("ok" if ok else "MISMATCH"))
    return lines


def check_same_model(graph, manifest, spec: str) -> None:
    """The spec must describe the built model (its inputs, outputs and dims), else --check would
    compare unrelated tensors."""
    def io(names):
        return [(n, graph.tensors[n].dtype, [d.to_json() for d in graph.tensors[n].shape])
                for n in names]

    ours = (io(graph.inputs), io(graph.outputs), sorted(graph.dims))
    built = ([(t.name, t.dtype, list(t.shape)) for t in manifest.inputs],
             [(t.name, t.dtype, list(t.shape)) for t in manifest.outputs],
             sorted(manifest.dim_names))
    if ours != built:
        raise AitError(f"{spec} does not describe the model built as '{manifest.name}' (its inputs, "
                       "outputs or dims differ); give the spec it was built from with --spec")
