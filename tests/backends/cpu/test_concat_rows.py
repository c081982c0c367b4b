"""Concats along the innermost axis on cpu (backends/cpu/concat.py): one kernel writes each output
row from every piece, with the pieces' widths as constants; concats along other axes keep the
strided copy per piece. Built models reproduce the reference exactly (a concat only copies), for
pieces of whole and partial vectors, a piece given twice, an integer concat and batches 1 and 3."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

from .helpers import write_spec


def n(name, op, inputs, **attrs):
    return {"name": name, "op": op, "inputs": inputs, **attrs}


CONCATS = dict(
    dims={"batch": {"min": 1, "max": 4, "opt": 3}},
    inputs={"a": {"shape": ["batch", 5, 7, 64]}, "b": {"shape": ["batch", 5, 7, 32]},
            "c": {"shape": ["batch", 5, 7, 12]}, "r": {"shape": ["batch", 4, 6]},
            "i": {"shape": ["batch", 6], "dtype": "int32"},
            "j": {"shape": ["batch", 3], "dtype": "int32"},
            # enough elements for the threads to split the rows (ait::kParallelGrain)
            "p": {"shape": ["batch", 16, 17, 96]}, "q": {"shape": ["batch", 16, 17, 40]}},
    graph=[n("cat4", "concat", ["a", "b", "c", "b"], axis=3),
           n("relu_a", "relu", ["a"]), n("cat_neg", "concat", ["relu_a", "c"], axis=-1),
           n("cat_int", "concat", ["i", "j"], axis=1),
           n("cat_rows", "concat", ["r", "r"], axis=1),
           n("cat_big", "concat", ["q", "p"], axis=3)],
    outputs=["cat4", "cat_neg", "cat_int", "cat_rows", "cat_big"])


@pytest.fixture(scope="module")
def built(tmp_path_factory, build_spec):
    spec = write_spec(tmp_path_factory.mktemp("concat_rows"), "concat_rows", **CONCATS)
    model, out_dir, _ = build_spec(spec, name="concat_rows")
    return model, load_model(spec), out_dir


def test_innermost_concats_take_the_row_kernel(built):
    _, _, out_dir = built
    with open(os.path.join(out_dir, "manifest.json")) as fh:
        steps = json.load(fh)["steps"]
    kernels = {}
    for step in steps:
        kernels.setdefault(step.get("node"), []).append(step["kernel"])
    for node in ("cat4", "cat_neg", "cat_int", "cat_big"):
        assert len(kernels[node]) == 1 and kernels[node][0].startswith("concat_rows"), kernels[node]
    # along the rows: a strided copy per piece
    assert len(kernels["cat_rows"]) == 2
    assert not any(k.startswith("concat_rows") for k in kernels["cat_rows"])


@pytest.mark.parametrize("batch", [1, 3])
def test_concats_match_reference_exactly(built, batch):
    model, graph, _ = built
    inputs = random_inputs(graph, {"batch": batch}, seed=batch)
    got = model.run(inputs)
    for name, expected in run_reference(graph, inputs).items():
        np.testing.assert_array_equal(got[name], expected, err_msg=name)
