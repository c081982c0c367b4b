"""Whole models through the optimizer and the cpu backend, against the reference executor: the
small specs (at the smallest and largest dims, so the memory plan's max-size workspace and
dynamic sizes both show; with -m slow, as tests/build/test_end_to_end.py checks them in every
run), float16/bfloat16 models (float32 compute, outputs in the
model dtype), and the large seed models at batch 1, run repeatedly to catch thread races."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

from .helpers import tolerance, write_spec

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPECS = os.path.join(PROJECT_ROOT, "specs")
SMALL = ["mlp", "tiny_cnn", "tiny_bert", "tiny_vit"]


def check(model, graph, dims: dict, seed: int = 0) -> tuple:
    """The model's outputs match the reference's; (inputs, outputs)."""
    inputs = random_inputs(graph, dims, seed=seed)
    ref = run_reference(graph, inputs)
    got = model.run(inputs, dims)
    for name, expected in ref.items():
        dtype = graph.tensors[name].dtype
        np.testing.assert_allclose(got[name].astype(np.float32), expected,
                                   **tolerance(expected, dtype), err_msg=name)
    return inputs, got


# tests/build/test_end_to_end.py checks the same on the same four specs built by SCons, as a
# user builds them (a build every default run makes anyway): this copy runs with -m slow
@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL)
def test_small_spec(build_spec, name):
    spec = os.path.join(SPECS, f"{name}.yaml")
    model, out_dir, _ = build_spec(spec, name=name)
    graph = load_model(spec)
    with open(os.path.join(out_dir, "manifest.json")) as fh:
        manifest = json.load(fh)
    assert manifest["memory_plan"] == "optimizer"
    if name == "tiny_bert":  # the optimizer's fused ops run here
        ops = {k["op"] for k in manifest["kernels"]}
        assert {"fused_elementwise", "multi_head_attention"} <= ops
    for which, seed in (("min", 1), ("max", 2), ("opt", 3)):
        check(model, graph, graph.bounds_env(which), seed)


HALF_MODEL = dict(
    dims={"batch": {"min": 1, "max": 4, "opt": 2}},
    inputs={"image": {"shape": ["batch", 8, 8, 3]}},
    graph=[{"name": "conv", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1},
           {"name": "bn", "op": "batch_norm"}, {"name": "act", "op": "gelu"},
           {"name": "pool", "op": "global_avg_pool"},
           {"name": "fc", "op": "linear", "out_features": 5},
           {"name": "half", "op": "cast", "inputs": ["fc"], "dtype": "float16"},
           {"name": "probs", "op": "softmax", "inputs": ["fc"]}],
    outputs=["probs", "pool", "half"])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_model(tmp_path_factory, build_spec, dtype):
    spec = write_spec(tmp_path_factory.mktemp(dtype), f"half_{dtype}", dtype=dtype, **HALF_MODEL)
    model, out_dir, _ = build_spec(spec, name=dtype)
    with open(os.path.join(out_dir, "manifest.json")) as fh:
        manifest = json.load(fh)
    dtypes = {i["name"]: i["dtype"] for i in manifest["inputs"] + manifest["outputs"]}
    assert dtypes == {"image": dtype, "probs": dtype, "pool": dtype, "half": "float16"}
    assert manifest["compute_dtype"] == "float32"
    graph = load_model(spec)
    check(model, graph, {"batch": 3})


@pytest.mark.parametrize("name,dims", [("resnet50", {"batch": 1}),
                                       ("bert_base", {"batch": 1, "seq": 128}),
                                       ("vit_b16", {"batch": 1})])
def test_seed_model_batch_1(build_spec, name, dims):
    spec = os.path.join(SPECS, f"{name}.yaml")
    model, _, _ = build_spec(spec, name=name)
    graph = load_model(spec)
    inputs, first = check(model, graph, dims)
    # threads must not race: repeated runs give the same bits as the checked one (a missing
    # barrier between ResNet-50's im2col chunks once made 11 of 12 two-thread runs differ)
    for _ in range(4):
        again = model.run(inputs, dims)
        for name_, value in first.items():
            np.testing.assert_array_equal(again[name_], value, err_msg=name_)
