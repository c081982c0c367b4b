"""A float16 copy of an imported float32 spec keeps the module's explicit float32 computation
(rotary embeddings: integer positions cast to float32, times a parameter, cos) by the casts the
float32 export dropped (ait_build/spec/float32_islands.py): the parameter cast up where it meets
the float32 value, the value cast down where it meets an activation. Without them the copy's
mul of float32 by float16 is an error."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from ait_build.bench.run import dtype_variant
from ait_build.bench.source_twin import checked_source
from ait_build.errors import AitError
from ait_build.ops.reference import random_inputs, run_reference
from ait_build.pipeline import build_plan, find_target
from ait_build.spec import float32_islands
from ait_build.spec.model import load_model
from ait_build.spec.source import graph_digest

ROPE = {
    "apiVersion": "ait-build/v1", "kind": "Model", "name": "rope", "dtype": "float32",
    "dims": {"batch": {"min": 1, "max": 4, "opt": 2}, "seq": {"min": 1, "max": 16, "opt": 8}},
    "inputs": {"x": {"shape": ["batch", "seq", 8]},
               "pos": {"shape": ["batch", "seq"], "dtype": "int64"}},
    "weights": {"random": {"seed": 0}},
    "blocks": {"mix": {"inputs": ["h", "c"], "graph": [
        {"name": "r", "op": "reshape", "inputs": ["c"], "shape": ["batch", "seq", 8]},
        {"name": "m", "op": "mul", "inputs": ["h", "r"]}], "outputs": ["m"]}},
    "graph": [
        {"name": "posf", "op": "cast", "inputs": ["pos"], "dtype": "float32"},
        {"name": "posr", "op": "reshape", "shape": ["batch", "seq", 1]},
        {"name": "freq", "op": "parameter", "shape": [8]},
        {"name": "ang", "op": "mul", "inputs": ["posr", "freq"]},
        {"name": "c", "op": "cos"},
        {"name": "h", "op": "linear", "inputs": ["x"], "out_features": 8},
        {"name": "y", "block": "mix", "inputs": ["h", "c"]},
        {"name": "z", "op": "add", "inputs": ["y", "h"]}],
    "outputs": ["z"],
}


def write(tmp_path, doc) -> str:
    path = tmp_path / "rope.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def test_boundaries_of_a_rotary_island(tmp_path):
    spec = write(tmp_path, ROPE)
    graph = load_model(spec)
    down, up = float32_islands.boundaries(graph, {e["name"] for e in ROPE["graph"] if "op" in e})
    # the parameter meets the cast positions at `ang`; the cos meets the linear's output inside
    # the block (through a reshape), so the top-level value cast down is `c`
    assert up == {"ang": ["freq"]} and down == {"c"}


def test_float16_copy_plans_and_computes_the_same(tmp_path):
    (tmp_path / "plain").mkdir()
    plain = write(tmp_path / "plain", dict(ROPE, dtype="float16"))  # the dtype alone changed
    with pytest.raises(AitError, match="different dtypes"):
        build_plan(plain, find_target("cpu"))
    spec = write(tmp_path, ROPE)
    copy = dtype_variant(spec, "float16", str(tmp_path))
    text = open(copy).read()
    assert "name: freq.float32" in text and "name: c.float32" in text
    for target in ("cpu", "h200"):
        build_plan(copy, find_target(target))
    g32, g16 = load_model(spec), load_model(copy)
    assert g16.tensors["c"].dtype == "float16" and g16.tensors["ang"].dtype == "float32"
    inputs = random_inputs(g32, {"batch": 2, "seq": 5}, seed=0)
    want, got = run_reference(g32, inputs)["z"], run_reference(g16, inputs)["z"]
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-2)


def test_an_imported_copy_still_compares_with_its_source(tmp_path):
    """The casts are the variant's, not a hand edit: the copy's source digest follows them, so
    `bench --vs torch` still finds the source model; an edited spec stays refused."""
    doc = dict(ROPE)
    doc["source"] = {"importer": "torch", "factory": "some.module:make",
                     "graph_sha256": graph_digest(doc)}
    copy = dtype_variant(write(tmp_path, doc), "float16", str(tmp_path))
    assert checked_source(copy, "copy").factory == "some.module:make"
    edited = dict(doc, outputs=["y"])
    (tmp_path / "e").mkdir()
    copy = dtype_variant(write(tmp_path / "e", edited), "float16", str(tmp_path / "e"))
    with pytest.raises(Exception, match="edited after import"):
        checked_source(copy, "copy")
