"""Helpers for the cuda tests: float16 and bfloat16 variants of the zoo's specs, building a spec
for a cuda target as one translation unit (the compile-only test on a 2-core machine: the CUTLASS
headers are parsed once per model), and what the GPU tests share: built models, inputs on the
device, error measures and their report (AIT_GPU_REPORT). Nothing here imports torch at import
time: the default run imports this module without it. A plain module, not a package: tests/backends/cuda
is on sys.path under pytest's default import mode, and a package named `cuda` would clash with
NVIDIA's."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import yaml

from ait_build.backends import toolchain_for
from ait_build.codegen.digest import record_digest
from ait_build.pipeline import emit, find_target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TARGETS = ["h200", "a100"]  # the cuda targets the GPU tests build and run (a100: PTX on Hopper)


def spec_path(name: str) -> str:
    return os.path.join(ROOT, "specs", f"{name}.yaml")


def fp16_spec(name: str) -> str:
    """specs/<name>.yaml computing in float16 (bench's variant under build/specs/)."""
    from ait_build.bench.run import dtype_variant
    return dtype_variant(spec_path(name), "float16", ROOT)


def bf16_spec(name: str) -> str:
    """specs/<name>.yaml computing in bfloat16: bench's variant under build/specs/, except for a
    spec that casts to float32 explicitly (tiny_bert's padding mask, written for a float32
    model): bench's variant keeps that cast, and the float32 mask bias then meets bfloat16
    attention scores (a dtype error). Such a spec gets a variant of its own,
    <name>_bfloat16_mask, whose casts to float32 produce bfloat16, as transformers casts the
    extended attention mask to the model's dtype."""
    from ait_build.bench.run import dtype_variant
    from ait_build.codegen.emit import write_if_changed
    path = dtype_variant(spec_path(name), "bfloat16", ROOT)
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    casts = [n for n in doc["graph"] if n.get("op") == "cast" and n.get("dtype") == "float32"]
    if not casts:
        return path
    for node in casts:
        node["dtype"] = "bfloat16"
    doc["name"] += "_mask"
    path = os.path.join(ROOT, "build", "specs", doc["name"] + ".yaml")
    text = (f"# specs/{name}.yaml with dtype bfloat16 and its float32 casts to bfloat16, written "
            "by tests/backends/cuda/cuda_helpers.py\n" + yaml.safe_dump(doc, sort_keys=False))
    write_if_changed(path, text.encode())
    return path


def fp16acc_target(target: str, out_dir: str) -> str:
    """targets/<target>.yaml copied to out_dir/<target>_fp16acc.yaml with `precision:
    {accumulate: float16}` appended: what docs/cuda.md tells a user to write."""
    return _target_copy(target, out_dir, "fp16acc",
                        lambda text: text + "precision: {accumulate: float16}\n")


def heuristic_target(target: str, out_dir: str) -> str:
    """targets/<target>.yaml copied to out_dir/<target>_heuristic.yaml without its
    profile_cache and the HBM bandwidth the estimate reads (backends/cuda/estimate.py): every
    tuned GEMM/conv call holds the heuristic's configurations."""
    return _target_copy(target, out_dir, "heuristic",
                        lambda text: re.sub(r"(?m)^(profile_cache|  hbm_tbps):.*\n", "", text))


def _target_copy(target: str, out_dir: str, suffix: str, edit) -> str:
    with open(os.path.join(ROOT, "targets", f"{target}.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    text = text.replace(f"\nname: {target}\n", f"\nname: {target}_{suffix}\n", 1)
    path = os.path.join(out_dir, f"{target}_{suffix}.yaml")
    os.makedirs(out_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(edit(text))
    return path


def unity_build(spec: str, target: str, out_dir: str) -> tuple:
    """Emits `spec` for `target` into out_dir and returns (emission, compile command of one
    translation unit including every kernel and the model file, link command)."""
    t = find_target(target)
    emission = emit(spec, t, out_dir)
    unity = os.path.join(out_dir, "all.cu")
    with open(unity, "w") as fh:
        for rel in emission.compiled_sources:
            fh.write(f'#include "{rel}"\n')
    tc = toolchain_for(t)
    obj = os.path.join(out_dir, "all.o")
    lib = os.path.join(out_dir, f"lib{emission.name}.so")
    return emission, tc.compile_command(unity, obj), tc.link_command([obj], lib)


def dependent_h200(project: str) -> str:
    """Path of the stock h200 target as h200_dependent, with dependent launches for calls of
    every size (the stock h200 launches dependents only for calls of at most 6 MiB of
    activations: capabilities.dependent_launch_max_mb) and the stock profile, written into the
    project folder `project` (targets/h200_dependent.yaml), where
    `build(spec, "h200_dependent", root=project)` finds it."""
    with open(find_target("h200").source, encoding="utf-8") as fh:
        text = fh.read().replace("\nname: h200\n", "\nname: h200_dependent\n", 1)
    text, n = re.subn(r"\n  dependent_launch_max_mb: \d+", "\n  dependent_launch_max_mb: 0", text)
    text, m = re.subn(r"\nprofile_cache: profiles/h200.yaml",
                      "\nprofile_cache: " + os.path.join(ROOT, "profiles", "h200.yaml"), text)
    assert n == m == 1, "targets/h200.yaml names dependent_launch_max_mb and its profile once"
    os.makedirs(os.path.join(project, "targets"), exist_ok=True)
    path = os.path.join(project, "targets", "h200_dependent.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def run_checked(cmd: list, what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise AssertionError(f"{what} failed ({' '.join(cmd[:3])} ...):\n{proc.stderr[-8000:]}")


def compile_and_link(jobs: list, workers: int) -> None:
    """Runs unity_build's commands for (what, compile command, link command) jobs, `workers`
    compilers at a time; a failure raises with the compiler's output."""
    def one(job):
        what, compile_cmd, link_cmd = job
        run_checked(compile_cmd, f"compiling {what}")
        run_checked(link_cmd, f"linking {what}")
        record_digest(link_cmd[link_cmd.index("-o") + 1])  # what Model() checks, as a build does

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, jobs))


def c_create(lib_path: str, name: str, weights: str) -> tuple:
    """(status, message) of ait_<name>_create on the library; destroys a created model."""
    lib = ctypes.CDLL(lib_path)
    create, destroy = lib[f"ait_{name}_create"], lib[f"ait_{name}_destroy"]
    last_error = lib[f"ait_{name}_last_error"]
    create.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    destroy.argtypes = [ctypes.c_void_p]
    last_error.restype = ctypes.c_char_p
    handle = ctypes.c_void_p()
    rc = create(weights.encode(), ctypes.byref(handle))
    message = last_error().decode()
    if handle.value:
        destroy(handle)
    return rc, message


# -- the GPU tests' shared parts ----------------------------------------------------------------
_BUILT: dict = {}


def built(spec: str, target: str):
    """(Model, graph) for a spec built with SCons (objects shared through a CacheDir); one Model
    per (spec, target) for the whole session, whichever test module asks first."""
    from ait_build.build.invoke import build
    from ait_build.runtime import Model
    from ait_build.spec.model import load_model
    key = (spec, target)
    if key not in _BUILT:
        graph = load_model(spec)
        out = os.path.join(ROOT, "build", target, graph.name)
        # AIT_PREBUILT=1: all_specs() were built in one scons run; a spec a test writes itself
        # (test_gpu_import_families' import) is not among them and is built here all the same
        if os.environ.get("AIT_PREBUILT") != "1" or \
                not os.path.isfile(os.path.join(out, "manifest.json")):
            cache = os.environ.get("AIT_BUILD_CACHE") or os.path.join(ROOT, "build", "cache")
            out = build(spec, target, cache=cache, quiet=True)
        _BUILT[key] = (Model(out), graph)
    return _BUILT[key]


def on_gpu(inputs: dict) -> dict:
    """NumPy inputs as torch CUDA tensors of the same dtype (bfloat16 too: the runtime's
    numpy_to_torch passes ml_dtypes' bfloat16 through its int16 bits)."""
    from ait_build.runtime.model import numpy_to_torch
    return {k: numpy_to_torch(v).cuda() for k, v in inputs.items()}


def errors(got: np.ndarray, ref: np.ndarray) -> dict:
    diff = got.astype(np.float64) - ref.astype(np.float64)
    scale = max(float(np.abs(ref).max()) if ref.size else 0.0, 1e-30)
    return {"max_abs": float(np.abs(diff).max()) if diff.size else 0.0,
            "max_rel_to_scale": float(np.abs(diff).max() / scale) if diff.size else 0.0,
            "rel_l2": float(np.linalg.norm(diff) / max(np.linalg.norm(ref), 1e-30))}


def op_tolerance(dtype: str, scale: float, single_op: bool = True) -> dict:
    """assert_allclose's rtol and atol for an output of `dtype` whose largest magnitude is
    `scale` (test_gpu_numerics' docstring says why): a few roundings of the output's precision
    for one op of a 16-bit model (bfloat16: 8x float16's, its unit roundoff ratio), float32
    outputs of 16-bit ops (casts) a little looser than float32 models."""
    if dtype == "float32":
        return dict(rtol=1e-4, atol=2e-5 * max(scale, 1.0)) if not single_op else \
            dict(rtol=1e-3, atol=1e-4 * max(scale, 1.0))
    ratio = 8 if dtype == "bfloat16" else 1
    return dict(rtol=4e-3 * ratio, atol=1e-3 * ratio * max(scale, 1.0))


def report(**row) -> None:
    """Appends one measured error (a JSON line) to $AIT_GPU_REPORT, when set."""
    path = os.environ.get("AIT_GPU_REPORT")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(row, sort_keys=True) + "\n")


def check_whole_model(spec: str, target: str, dims: dict | None, seed: int, bound: float,
                      case: str) -> None:
    """A 16-bit model against the reference executor: finite outputs, relative L2 error under
    `bound`; every output's errors are reported."""
    from ait_build.ops.reference import random_inputs, run_reference
    model, graph = built(spec, target)
    env = {d: r.opt for d, r in graph.dims.items()} if dims is None else dims
    inputs = random_inputs(graph, env, seed=seed)
    got = model.run(on_gpu(inputs))
    for out, expected in run_reference(graph, inputs).items():
        actual = got[out].float().cpu().numpy()
        assert np.isfinite(actual).all(), out
        e = errors(actual, expected)
        report(case=case, output=out, dtype=graph.tensors[out].dtype, **e)
        assert e["rel_l2"] < bound, (out, e)
