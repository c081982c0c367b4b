from ait_build.passes import fuse_layernorm

from .helpers import check_pass, model, node_of, ops, target

X = "{x: {shape: [batch, 6, 16]}}"


def test_residual_add_moves_into_the_norm():
    g = model("""
        - {name: dense, op: linear, inputs: [x], out_features: 16}
        - {name: add, op: add, inputs: [dense, x]}
        - {name: ln, op: layer_norm, eps: 1.0e-12}
        """, X, "[ln]")
    after, summary = check_pass(g, fuse_layernorm.run)
    assert ops(after) == ["linear", "layer_norm"]
    assert node_of(after, "layer_norm").inputs == ["dense", "x"]
    assert summary == "1 residual adds fused into layer_norm"


def test_sum_read_elsewhere_or_broadcast_add_stays():
    g = model("""
        - {name: a, op: add, inputs: [x, x]}
        - {name: ln1, op: layer_norm}
        - {name: keep, op: add, inputs: [a, ln1]}
        - {name: pos, op: parameter, shape: [6, 16], weights: {value: table}}
        - {name: b, op: add, inputs: [keep, pos]}
        - {name: ln2, op: layer_norm, inputs: [b]}
        """, X, "[ln2]")
    after, summary = check_pass(g, fuse_layernorm.run)
    assert summary == "" and ops(after) == ops(g)


def test_capability_off():
    g = model("""
        - {name: add, op: add, inputs: [x, x]}
        - {name: ln, op: layer_norm}
        """, X, "[ln]")
    after, summary = check_pass(g, fuse_layernorm.run, target("cpu", fused_layernorm=False))
    assert summary == "" and ops(after) == ["add", "layer_norm"]
