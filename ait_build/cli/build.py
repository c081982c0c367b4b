"""`ait-build build` (SCons in a subprocess) and `ait-build run` (a built library on inputs)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from ait_build.cli.args import dim_value, nonnegative_int, positive_int
from ait_build.errors import AitError, ReportedError
from ait_build.ir.resources import PACKAGE_DIR, project_root
from ait_build.build.spec_list import join_paths

# the SConstruct `ait-build init` writes; a folder without one builds through it
PROJECT_SCONSTRUCT = os.path.join(PACKAGE_DIR, "project_files", "SConstruct")


def spec_name(spec: str) -> str:
    """A spec's model name (its build folder), read without building the graph but with the
    spec loader's limits, and checked by the rules for model names."""
    from ait_build.spec.names import check_model_name
    from ait_build.spec.yamlfile import load_yaml, where
    doc = load_yaml(spec)
    if not isinstance(doc.get("name"), str):
        from ait_build.spec.model import load_model
        return load_model(spec).name  # reports the spec's own error, with its location
    check_model_name(doc["name"], where(doc, "name"))
    return doc["name"]


def resolve_spec(spec: str, root: str | None = None) -> str:
    """The absolute path of a spec given as a path or as a model name under specs/."""
    if not spec.endswith((".yaml", ".yml")) and os.sep not in spec:
        spec = os.path.join(root or project_root(), "specs", spec + ".yaml")
    if not os.path.isfile(spec):
        raise AitError(f"spec file '{spec}' not found")
    return os.path.abspath(spec)


def build(spec: str, target: str, jobs: int | None = None, cache: str | None = None,
          cache_readonly: bool = False, verbose: bool = False, root: str | None = None,
          quiet: bool = False) -> str:
    """Builds one spec (a path, or a model name under specs/) for one target; returns the build
    folder. SCons prints its progress; a failed build raises AitError."""
    from ait_build.spec.model import load_model
    root = root or project_root()
    spec = resolve_spec(spec, root)
    name = load_model(spec).name  # the spec's own error, as `check` reports it, before SCons
    cmd = [sys.executable, "-m", "SCons", "-Q", "-C", root, f"target={target}",
           f"spec={join_paths([spec])}"]
    if not os.path.isfile(os.path.join(root, "SConstruct")):
        cmd[4:4] = ["-f", PROJECT_SCONSTRUCT]  # SCons' top folder stays `root`: its build/
    if jobs:
        cmd.append(f"-j{jobs}")
    if cache is not None:
        cmd.append(f"cache={cache}")
    if cache_readonly:
        cmd.append("cache_readonly=1")
    if verbose:
        cmd.append("verbose=1")
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL if quiet else None,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode:
        raise ReportedError(relayed_error(proc.stderr, proc.returncode))
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    return os.path.join(root, "build", target, name)


def relayed_error(stderr: str, returncode: int) -> str:
    """SCons' error output as the CLI prints errors: located errors as they are, `scons: error:`
    lines as `error:`, and an `error:` line when nothing said what failed."""
    text = stderr.strip().replace("scons: error: ", "error: ")
    if "error:" not in text:
        text = (text + "\n" if text else "") + f"error: the build failed (scons exited with {returncode})"
    return text


def cmd_build(args) -> int:
    out = build(args.spec, args.target, args.jobs, args.cache, args.cache_readonly, args.verbose)
    name = os.path.basename(out)
    from ait_build.runtime.manifest import libraries_text, load_manifest
    # the libraries it linked: the cpu target's `auto` BLAS is whichever is installed
    libraries = libraries_text(load_manifest(os.path.join(out, "manifest.json")).libraries)
    print(f"built {os.path.relpath(os.path.join(out, f'lib{name}.so'))} "
          f"(header {name}.h, manifest.json, weights.safetensors)"
          + (f"; with {libraries}" if libraries else ""))
    return 0


# -- run ------------------------------------------------------------------------------------------
def find_spec(manifest, given: str | None) -> str | None:
    """The spec a build came from: `given`, else specs/<name>.yaml of the project, if any."""
    if given:
        return given
    try:
        path = os.path.join(project_root(), "specs", manifest.name + ".yaml")
    except AitError:
        return None
    return path if os.path.isfile(path) else None


def make_inputs(manifest, graph, dims: dict, seed: int) -> dict:
    """Random inputs at each dim's opt (overridden by `dims`); from the spec's graph when there is
    one, so integer inputs stay inside the tables they index."""
    from ait_build.ir.dtypes import NUMPY
    from ait_build.ops.reference import dim_values
    from ait_build.runtime.manifest import evaluate
    env = dim_values({d.name: d for d in manifest.dims}, dims)
    if graph is not None:
        from ait_build.ops.reference import random_inputs
        arrays = random_inputs(graph, env, seed=seed)
        return {t.name: arrays[t.name].astype(NUMPY[t.dtype]) for t in manifest.inputs}
    rng = np.random.default_rng(seed)
    out = {}
    for t in manifest.inputs:
        shape = tuple(evaluate(d, env) for d in t.shape)
        dtype = NUMPY[t.dtype]
        out[t.name] = (rng.standard_normal(shape) if dtype.kind == "f" else rng.integers(0, 2, shape)).astype(dtype)
    return out


def describe(name: str, arr: np.ndarray) -> str:
    flat = arr.astype(np.float64).ravel()
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


def cmd_run(args) -> int:
    from ait_build.cli.main import load_arrays
    from ait_build.cli.args import check_output_path, dims_of
    from ait_build.runtime import Model
    dims = dims_of(args.dim, args.batch)
    if args.output:
        check_output_path(args.output)  # before the work, not after it
    with Model(args.build_dir) as model:
        spec = find_spec(model.manifest, args.spec)
        graph = None
        if spec and (args.check or args.random_input):
            from ait_build.spec.model import load_model
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
            from ait_build.ir.weights import save_safetensors
            save_safetensors(outputs, args.output)
            print(f"wrote {args.output}", file=sys.stderr)
        if not args.check:
            return 0
        if graph is None:
            raise AitError(f"--check needs the spec: give --spec (looked for specs/{model.name}.yaml)")
        from ait_build.ops.reference import ProgressLine, run_reference
        reference = run_reference(graph, inputs, progress=ProgressLine())
        lines = compare(outputs, reference, model.manifest.raw.get("dtype", "float32"))
        print("\n".join(lines))
        return 1 if any(line.endswith("MISMATCH") for line in lines) else 0


def register(sub) -> None:
    from ait_build.cli.main import add_command
    p = add_command(sub, "build", "build a spec's library with SCons (build/<target>/<model>/)",
                    "Build one spec for one target with SCons, in the project around the working "
                    "directory (the nearest folder above it with an SConstruct, else the working "
                    "directory itself): its build/<target>/<model>/ gets lib<model>.so, the "
                    "header, manifest.json and weights.safetensors.",
                    ["ait-build build specs/mlp.yaml --target cpu",
                     "ait-build build resnet50 --target h200 -j 2 --cache ~/.cache/ait-build"])
    p.add_argument("spec", help="spec file, or a model name under specs/, e.g. mlp")
    p.add_argument("--target", default="cpu", help="a name from `ait-build targets` (default: "
                   "cpu), e.g. --target h200")
    p.add_argument("-j", "--jobs", type=positive_int, help="parallel compile jobs (default: the "
                   "cores, capped by memory), e.g. -j 2")
    p.add_argument("--cache", metavar="DIR", help="shared CacheDir (default: $AIT_BUILD_CACHE)")
    p.add_argument("--cache-readonly", action="store_true", help="read the cache, never write it")
    p.add_argument("-v", "--verbose", action="store_true", help="print full command lines")
    p.set_defaults(func=cmd_build)

    p = add_command(sub, "run", "run a built library on random or given inputs",
                    "Run a built model and print each output's statistics; --check compares "
                    "them with the NumPy reference executor (exit 1 past the tolerance).",
                    ["ait-build run build/cpu/mlp --random-input --check",
                     "ait-build run build/cpu/tiny_bert --random-input --dim seq=32 -o "
                     "out.safetensors"])
    p.add_argument("build_dir", help="a build folder, e.g. build/cpu/mlp")
    p.add_argument("--random-input", action="store_true", help="random inputs at each dim's opt")
    p.add_argument("--inputs", metavar="FILE", help="inputs from a safetensors file")
    p.add_argument("--batch", type=positive_int, help="value of the 'batch' dim, e.g. --batch 4")
    p.add_argument("--dim", action="append", type=dim_value, metavar="NAME=VALUE",
                   help="a dim's value (repeatable), e.g. --dim seq=64")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the random inputs (default: 0)")
    p.add_argument("--check", action="store_true", help="compare with the NumPy reference executor")
    p.add_argument("--spec", help="the model's spec for --check (default: specs/<model>.yaml of "
                   "the project)")
    p.add_argument("-o", "--output", metavar="FILE", help="write outputs to a safetensors file")
    p.set_defaults(func=cmd_run)
