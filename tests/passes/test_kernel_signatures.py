from ait_build.passes.kernel_signatures import kernel_key, unique_kernels

from .helpers import model

X = "{x: {shape: [batch, 5, 16]}}"


def keys(graph) -> dict:
    return {n.name: kernel_key(graph, n) for n in graph.nodes}


def test_equal_signatures_share_a_key_names_do_not_matter():
    g = model("""
        - {name: first, op: linear, inputs: [x], out_features: 16, activation: relu}
        - {name: second, op: linear, out_features: 16, activation: relu}
        - {name: narrow, op: linear, out_features: 8, activation: relu}
        - {name: no_bias, op: linear, inputs: [x], out_features: 16, bias: false, activation: relu}
        - {name: n1, op: layer_norm, inputs: [second]}
        - {name: n2, op: layer_norm, inputs: [no_bias]}
        """, X, "[narrow, n1, n2]")
    key = keys(g)
    assert key["first"] == key["second"] and key["first"].startswith("linear_relu_")
    assert len({key["first"], key["narrow"], key["no_bias"]}) == 3
    assert key["n1"] == key["n2"] and key["n1"].startswith("layer_norm_")
    assert unique_kernels(g) == 4


def test_symbolic_dims_are_keyed_by_name_and_parameters_get_no_kernel():
    dims = "{batch: {min: 1, max: 4, opt: 2}, seq: {min: 1, max: 9, opt: 3}}"
    g = model("""
        - {name: a, op: relu, inputs: [x]}
        - {name: b, op: relu, inputs: [y]}
        - {name: p, op: parameter, shape: [16], weights: {value: table}}
        - {name: c, op: add, inputs: [a, p]}
        """, "{x: {shape: [batch, 5, 16]}, y: {shape: [seq, 5, 16]}}", "[b, c]", dims=dims)
    key = keys(g)
    assert key["a"] != key["b"]
    assert key["p"] == ""
    assert kernel_key(g, g.node("a")) == key["a"]  # stable
