"""The AVX-512 copies of cpu kernels with exp/erfc/tanh-heavy activations, softmax and attention
(templates/cpu/kernel.cpp.j2, ait_cpu.h's AIT_WIDE_COPIES): which kernels get one, and that a
model of such kernels matches the reference on both copies. The copy a process runs is fixed at
its first kernel call (the CPU, or AIT_CPU_AVX512=0), so each copy runs in a subprocess of its
own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

from .helpers import cpu_flags, tolerance, write_spec


def n(name, op, inputs, **attrs):
    return {"name": name, "op": op, "inputs": inputs, **attrs}


SLOW_AND_FAST = dict(
    dims={"batch": {"min": 1, "max": 4, "opt": 2}},
    inputs={"x": {"shape": ["batch", 7, 40]}, "mask": {"shape": ["batch", 1, 1, 7]}},
    graph=[n("gelu_linear", "linear", ["x"], out_features=48, activation="gelu"),
           n("silu", "silu", ["x"]), n("tanh", "tanh", ["x"]),
           n("softmax", "softmax", ["gelu_linear"]),
           n("mha", "multi_head_attention", ["x", "x", "x", "mask"], num_heads=5, head_dim=8),
           n("relu_linear", "linear", ["x"], out_features=24, activation="relu"),
           n("add", "add", ["x", "tanh"])],
    outputs=["gelu_linear", "silu", "tanh", "softmax", "mha", "relu_linear", "add"])

RUN = r"""
import json, os, sys, types
import numpy as np
root, out_dir, lib, npz, result = sys.argv[1:6]
sys.path.insert(0, root)
from tests.backends.cpu.helpers import CModel
with open(os.path.join(out_dir, "manifest.json")) as fh:
    name = json.load(fh)["c_name"][len("ait_"):]
model = CModel(out_dir, types.SimpleNamespace(name=name), lib)
got = model.run(dict(np.load(npz)))
model.close()
np.savez(result, **got)
"""
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def avx512() -> bool:
    return {"avx512f", "avx512vl", "avx512bw", "avx512dq"} <= cpu_flags()


@pytest.fixture(scope="module")
def built(tmp_path_factory, build_spec):
    spec = write_spec(tmp_path_factory.mktemp("wide"), "wide_copies", **SLOW_AND_FAST)
    model, out_dir, _ = build_spec(spec, optimize=False, name="wide")
    return out_dir, model.lib._name, load_model(spec)


def test_which_kernels_get_a_wide_copy(built):
    out_dir = built[0]
    with open(os.path.join(out_dir, "manifest.json")) as fh:
        steps = {s["node"]: s["kernel"] for s in json.load(fh)["steps"] if s.get("node")}
    wide = {}
    for node, kernel in steps.items():
        with open(os.path.join(out_dir, "src", kernel + ".cpp")) as fh:
            wide[node] = f"{kernel}_wide(" in fh.read()
    # softmax and attention (its softmax) run their exp twice as wide; the rest stay single
    assert wide == {"gelu_linear": True, "silu": True, "tanh": True, "softmax": True,
                    "mha": True, "relu_linear": False, "add": False}


def skip_unless_runs(copy: str) -> None:
    """Skips the test where this CPU cannot run the `copy` (`avx512` or `base`)."""
    if copy == "avx512" and (not avx512() or os.uname().machine != "x86_64"):
        pytest.skip("this CPU has no AVX-512: only the base copy can run here")


def run_copy(out_dir: str, lib: str, inputs: dict, tmp_path, copy: str) -> dict:
    """A built model's outputs for `inputs` on one copy (`avx512` or `base`), run in a
    subprocess (the copy is chosen when the library loads)."""
    env = dict(os.environ, AIT_CPU_AVX512="1" if copy == "avx512" else "0")
    np.savez(tmp_path / "in.npz", **inputs)
    subprocess.run([sys.executable, "-c", RUN, ROOT, out_dir, lib,
                    str(tmp_path / "in.npz"), str(tmp_path / "out.npz")], check=True, env=env)
    return dict(np.load(tmp_path / "out.npz"))


def check_copy(built, tmp_path, copy: str) -> None:
    """Runs a built model (out_dir, library, graph) on one copy, `avx512` or `base`, in a
    subprocess at batches 1 and 3, against the reference."""
    skip_unless_runs(copy)
    out_dir, lib, graph = built
    for batch in (1, 3):
        inputs = random_inputs(graph, {"batch": batch}, seed=batch)
        got = run_copy(out_dir, lib, inputs, tmp_path, copy)
        for name, expected in run_reference(graph, inputs).items():
            np.testing.assert_allclose(got[name], expected, **tolerance(expected), err_msg=name)


@pytest.mark.parametrize("copy", ["avx512", "base"])
def test_both_copies_match_reference(built, tmp_path, copy):
    check_copy(built, tmp_path, copy)
