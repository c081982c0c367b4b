"""Manifest loading and dim binding, without a library."""

from __future__ import annotations

import json

import pytest

from ait_build.codegen.digest import json_sha256
from ait_build.runtime.manifest import ModelError, bind_dims, evaluate, load_manifest, output_shapes


def _raw(inputs, outputs=None, dims=None) -> dict:
    raw = {"name": "m", "c_name": "ait_m", "target": "cpu", "backend": "cpu", "device": "host",
           "dims": dims or [{"name": "batch", "min": 1, "max": 8, "opt": 8},
                            {"name": "seq", "min": 2, "max": 9, "opt": 9}],
           "inputs": [{"name": n, "dtype": "float32", "shape": s} for n, s in inputs.items()],
           "outputs": [{"name": n, "dtype": "float32", "shape": s} for n, s in (outputs or {}).items()],
           "weights": {"file": "weights.safetensors", "bytes": 8, "sha256": "0" * 64}}
    raw["build_id"] = json_sha256(raw)
    return raw


def _manifest(tmp_path, inputs, outputs=None, dims=None):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(_raw(inputs, outputs, dims)))
    return load_manifest(str(path))


def test_expressions_evaluate_like_the_ir_prints_them():
    assert evaluate("2*batch*seq + 1", {"batch": 3, "seq": 5}) == 31
    assert evaluate("batch - 1", {"batch": 3}) == 2
    assert evaluate(7, {}) == 7


@pytest.mark.parametrize("expr", ["__import__('os')", "batch ** 2", "batch.real", "1.5*batch"])
def test_only_integer_arithmetic_on_names_is_accepted(tmp_path, expr):
    with pytest.raises(ModelError, match="bad dim expression"):
        _manifest(tmp_path, {"x": [expr]})


def test_a_dim_seen_only_in_an_expression_is_solved(tmp_path):
    m = _manifest(tmp_path, {"x": ["batch", 4], "flat": ["2*batch*seq + 1"]},
                  outputs={"y": ["seq", "batch*seq"]})
    env = bind_dims(m, {"x": (3, 4), "flat": (31,)})
    assert env == {"batch": 3, "seq": 5}
    assert output_shapes(m, env) == {"y": (5, 15)}


def test_expression_without_a_whole_solution_is_reported(tmp_path):
    m = _manifest(tmp_path, {"x": ["batch", 4], "flat": ["2*batch*seq + 1"]})
    with pytest.raises(ModelError, match="cannot tell dim"):
        bind_dims(m, {"x": (3, 4), "flat": (32,)})


def test_consistency_between_inputs(tmp_path):
    m = _manifest(tmp_path, {"a": ["batch", "seq"], "b": ["seq", "batch"]})
    assert bind_dims(m, {"a": (2, 3), "b": (3, 2)}) == {"batch": 2, "seq": 3}
    with pytest.raises(ModelError, match="dim 'seq' is 3 elsewhere but 4 in input 'b'"):
        bind_dims(m, {"a": (2, 3), "b": (4, 2)})


@pytest.mark.parametrize("text, message", [
    ('{"name": "m"}', "no build_id"),
    ("[1, 2]", "not an ait-build manifest"),
    ("{" * 100000, "not JSON"),
    ("\xff", "not JSON"),
])
def test_broken_manifest_is_an_error_not_a_traceback(tmp_path, text, message):
    (tmp_path / "manifest.json").write_text(text, encoding="latin-1")
    with pytest.raises(ModelError, match=message):
        load_manifest(str(tmp_path / "manifest.json"))


@pytest.mark.parametrize("edit", [
    lambda m: m["dims"][0].update(max=4096),
    lambda m: m["inputs"].append({"name": "y", "dtype": "float32", "shape": [4]}),
    lambda m: m["weights"].update(bytes="abc"),
    lambda m: m.update(weights=[]),
])
def test_hand_edited_manifest_is_refused_by_its_build_id(tmp_path, edit):
    raw = _raw({"x": ["batch", 4]})
    edit(raw)
    (tmp_path / "manifest.json").write_text(json.dumps(raw, indent=2))
    with pytest.raises(ModelError, match="was changed after the build"):
        load_manifest(str(tmp_path / "manifest.json"))


def test_a_sealed_manifest_of_the_wrong_shape_is_still_one_error(tmp_path):
    """Fields of the wrong type are reported even when build_id was recomputed after the edit."""
    raw = _raw({"x": ["batch", 4]})
    raw["weights"] = []
    raw["build_id"] = json_sha256(raw)
    (tmp_path / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ModelError, match="not a valid ait-build manifest"):
        load_manifest(str(tmp_path / "manifest.json"))


@pytest.mark.parametrize("dims, message", [
    ({"seq": 3.0}, "dim 'seq' must be an integer, got float"),
    ({"seq": "3"}, "must be an integer, got str"),
    ({"seq": [3]}, "must be an integer, got list"),
    ({"seq": True}, "must be an integer, got bool"),
    ([3], "dims must be a dict"),
])
def test_given_dims_must_be_integers(tmp_path, dims, message):
    m = _manifest(tmp_path, {"x": ["batch", "seq"]})
    with pytest.raises(ModelError, match=message):
        bind_dims(m, {"x": (2, 3)}, dims)


def test_a_manifest_without_device_asks_for_a_rebuild(tmp_path):
    raw = _raw({"x": ["batch", 4]})
    del raw["device"]
    raw["build_id"] = json_sha256(raw)
    (tmp_path / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ModelError, match="no 'device' field .*rebuild the model"):
        load_manifest(str(tmp_path / "manifest.json"))


@pytest.mark.parametrize("inputs, message", [
    ({"x": ["batch", -32]}, "expected a non-negative integer, got -32"),
    ({"x": ["batch", "nosuchdim"]}, "names dims ['nosuchdim'] the manifest does not declare"),
    ({"x": ["batch//0"]}, "divides by something other than a positive number"),
    ({"x": ["batch//seq"]}, "divides by something other than a positive number"),
])
def test_a_sealed_manifest_the_runtime_cannot_rely_on_is_refused(tmp_path, inputs, message):
    """A manifest sealed again after a hand edit passes its build_id; what the runtime then
    relies on is checked when it loads (these were KeyError, ZeroDivisionError and NumPy's
    'negative dimensions' at run time)."""
    with pytest.raises(ModelError, match="not a valid ait-build manifest") as info:
        _manifest(tmp_path, inputs)
    assert message in str(info.value)


def test_a_sealed_manifest_with_an_unknown_dtype_is_refused(tmp_path):
    raw = _raw({"x": ["batch", 4]})
    raw["inputs"][0]["dtype"] = "float99"
    del raw["build_id"]
    raw["build_id"] = json_sha256(raw)
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ModelError, match="tensor 'x' has dtype 'float99'"):
        load_manifest(str(path))
