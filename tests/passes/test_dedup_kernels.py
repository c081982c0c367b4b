from ait_build.passes import dedup_kernels

from .helpers import check_pass, model

X = "{x: {shape: [batch, 5, 16]}}"


def test_equal_signatures_share_a_kernel_names_do_not_matter():
    g = model("""
        - {name: first, op: linear, inputs: [x], out_features: 16, activation: relu}
        - {name: second, op: linear, out_features: 16, activation: relu}
        - {name: narrow, op: linear, out_features: 8, activation: relu}
        - {name: no_bias, op: linear, inputs: [x], out_features: 16, bias: false, activation: relu}
        - {name: n1, op: layer_norm, inputs: [second]}
        - {name: n2, op: layer_norm, inputs: [no_bias]}
        """, X, "[narrow, n1, n2]")
    after, summary = check_pass(g, dedup_kernels.run)
    key = {n.name: n.kernel for n in after.nodes}
    assert key["first"] == key["second"] and key["first"].startswith("linear_relu_")
    assert len({key["first"], key["narrow"], key["no_bias"]}) == 3
    assert key["n1"] == key["n2"] and key["n1"].startswith("layer_norm_")
    assert summary == "6 kernel launches share 4 unique kernels"


def test_symbolic_dims_are_keyed_by_name_and_parameters_get_no_kernel():
    dims = "{batch: {min: 1, max: 4, opt: 2}, seq: {min: 1, max: 9, opt: 3}}"
    g = model("""
        - {name: a, op: relu, inputs: [x]}
        - {name: b, op: relu, inputs: [y]}
        - {name: p, op: parameter, shape: [16], weights: {value: table}}
        - {name: c, op: add, inputs: [a, p]}
        """, "{x: {shape: [batch, 5, 16]}, y: {shape: [seq, 5, 16]}}", "[b, c]", dims=dims)
    after, _ = check_pass(g, dedup_kernels.run)
    assert after.node("a").kernel != after.node("b").kernel
    assert after.node("p").kernel == ""
    assert dedup_kernels.kernel_key(after, after.node("a")) == after.node("a").kernel  # stable
