"""Inputs for a built model: random ones at its dims (from the spec's graph when there is one, so
integer inputs stay inside the tables they index), or the arrays of a safetensors file."""

from __future__ import annotations


import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file

from ait_build.errors import AitError
from ait_build.files.read import check_regular, not_safetensors
from ait_build.ir.dtypes import NUMPY
from ait_build.ops.reference import dim_values, random_inputs
from ait_build.runtime.manifest import evaluate


def make_inputs(manifest, graph, dims: dict, seed: int) -> dict:
    """Random inputs at each dim's opt (overridden by `dims`); from the spec's graph when there is
    one, so integer inputs stay inside the tables they index."""
    env = dim_values({d.name: d for d in manifest.dims}, dims)
    if graph is not None:
        arrays = random_inputs(graph, env, seed=seed)
        return {t.name: arrays[t.name].astype(NUMPY[t.dtype]) for t in manifest.inputs}
    rng = np.random.default_rng(seed)
    out = {}
    for t in manifest.inputs:
        shape = tuple(evaluate(d, env) for d in t.shape)
        dtype = NUMPY[t.dtype]
        out[t.name] = (rng.standard_normal(shape) if dtype.kind == "f" else rng.integers(0, 2, shape)).astype(dtype)
    return out


def load_arrays(path) -> dict:
    try:
        check_regular(path)  # a FIFO or a device would block or never end
    except FileNotFoundError:
        raise AitError(f"{path}: not found") from None
    except OSError as exc:
        raise AitError(f"{path}: {exc.strerror}") from None
    try:
        with safe_open(path, framework="numpy") as fh:  # the header only
            if any(fh.get_slice(k).get_dtype() == "BF16" for k in fh.keys()):
                NUMPY["bfloat16"]  # NumPy knows bfloat16 once ml_dtypes is imported
        return load_file(path)
    except Exception as exc:
        raise AitError(not_safetensors(path, "--inputs", "the model's inputs", "in.safetensors")
                       or f"{path}: cannot read safetensors file: {exc}") from None

