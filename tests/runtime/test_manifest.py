"""Manifest loading and dim binding, without a library."""

from __future__ import annotations

import json

import pytest

from ait_build.runtime.manifest import ModelError, bind_dims, evaluate, load_manifest, output_shapes


def _manifest(tmp_path, inputs, outputs=None, dims=None):
    raw = {"name": "m", "target": "cpu", "backend": "cpu",
           "dims": dims or [{"name": "batch", "min": 1, "max": 8}, {"name": "seq", "min": 2, "max": 9}],
           "inputs": [{"name": n, "dtype": "float32", "shape": s} for n, s in inputs.items()],
           "outputs": [{"name": n, "dtype": "float32", "shape": s} for n, s in (outputs or {}).items()]}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(raw))
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


def test_broken_manifest_is_an_error_not_a_traceback(tmp_path):
    (tmp_path / "manifest.json").write_text('{"name": "m"}')
    with pytest.raises(ModelError, match="not a valid ait-build manifest"):
        load_manifest(str(tmp_path / "manifest.json"))
