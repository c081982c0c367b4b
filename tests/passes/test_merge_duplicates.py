from ait_build.passes import merge_duplicates

from .helpers import check_pass, model, ops

X = "{x: {shape: [batch, 4, 8]}}"


def test_a_chain_computed_twice_is_computed_once():
    """An importer's position table rebuilt at each use: iota -> reshape -> compare, twice."""
    g = model("""
        - {name: i1, op: iota, shape: [8], axis: 0, dtype: float32}
        - {name: r1, op: reshape, inputs: [i1], shape: [1, 1, 8]}
        - {name: m1, op: mul, inputs: [x, r1]}
        - {name: i2, op: iota, shape: [8], axis: 0, dtype: float32}
        - {name: r2, op: reshape, inputs: [i2], shape: [1, 1, 8]}
        - {name: m2, op: mul, inputs: [x, r2]}
        - {name: s, op: add, inputs: [m1, m2]}
        """, X, "[s]")
    after, summary = check_pass(g, merge_duplicates.run)
    assert ops(after) == ["iota", "reshape", "mul", "add"]
    assert after.node("s").inputs == ["m1", "m1"] and summary == "3 duplicate nodes merged"


def test_other_attrs_inputs_weights_and_outputs_stay():
    g = model("""
        - {name: a, op: mul, inputs: [x], scalar: 2.0}
        - {name: b, op: mul, inputs: [x], scalar: 3.0}
        - {name: c, op: tanh, inputs: [a]}
        - {name: d, op: tanh, inputs: [b]}
        - {name: f1, op: linear, inputs: [x], out_features: 8}
        - {name: f2, op: linear, inputs: [x], out_features: 8}
        - {name: e, op: tanh, inputs: [x]}
        - {name: out, op: tanh, inputs: [x]}
        - {name: s, op: concat, inputs: [c, d, f1, f2, e], axis: 2}
        """, X, "[s, out]")
    after, summary = check_pass(g, merge_duplicates.run)
    # other scalars, other inputs, other weights differ; `out` is a graph output: it stays
    assert ops(after) == ops(g) and summary == ""


def test_attributes_compare_whole_not_by_their_printed_form():
    import numpy as np
    from ait_build.passes.merge_duplicates import _frozen
    a, b = np.zeros(5000, np.float32), np.zeros(5000, np.float32)
    b[2500] = 1.0  # repr elides the middle of both arrays alike
    assert repr(a) == repr(b) and _frozen({"value": a}) != _frozen({"value": b})
    assert _frozen({"value": a}) == _frozen({"value": a.copy()})
    assert _frozen({"s": 1}) != _frozen({"s": 1.0}) and _frozen((1, 2)) != _frozen([1, 2])
