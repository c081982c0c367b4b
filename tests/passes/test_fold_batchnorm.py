import numpy as np

from ait_build.passes import fold_batchnorm

from .helpers import check_pass, model, ops

IMG = "{image: {shape: [batch, 8, 8, 3]}}"


def test_conv_bn_and_linear_bn_fold():
    g = model("""
        - {name: conv, op: conv2d, out_channels: 16, kernel: 3, padding: 1, bias: false}
        - {name: bn, op: batch_norm}
        - {name: act, op: relu}
        - {name: pool, op: global_avg_pool}
        - {name: fc, op: linear, out_features: 10}
        - {name: bn2, op: batch_norm, eps: 0.001}
        """, IMG, "[bn2]")
    after, summary = check_pass(g, fold_batchnorm.run)
    assert ops(after) == ["conv2d", "relu", "global_avg_pool", "linear"]
    assert summary == "2 batch norms folded into conv/linear weights"
    conv, fc = after.node("conv"), after.node("fc")
    assert conv.weights == {"weight": "conv.folded_weight", "bias": "conv.folded_bias"}
    assert conv.attrs["bias"] is True and conv.outputs == ["bn"]
    assert fc.weights == {"weight": "fc.folded_weight", "bias": "fc.folded_bias"}
    assert after.outputs == ["bn2"]
    # the spec's own weights are kept as they are, for a reload or another target
    assert "conv.weight" in after.weights and "conv.weight" not in after.tensors


def test_not_folded_when_the_conv_output_is_read_elsewhere_or_has_an_epilogue():
    g = model("""
        - {name: conv, op: conv2d, out_channels: 8, kernel: 1}
        - {name: bn, op: batch_norm}
        - {name: y, op: add, inputs: [conv, bn]}
        - {name: conv2, op: conv2d, inputs: [y], out_channels: 8, kernel: 1, activation: relu}
        - {name: bn2, op: batch_norm}
        """, IMG, "[bn2]")
    after, summary = check_pass(g, fold_batchnorm.run)
    assert summary == "" and ops(after) == ops(g)


def test_grouped_conv_folds_per_output_channel():
    g = model("""
        - {name: conv, op: conv2d, out_channels: 6, kernel: 3, groups: 3, stride: 2}
        - {name: bn, op: batch_norm}
        """, IMG, "[bn]")
    after, _ = check_pass(g, fold_batchnorm.run)
    assert ops(after) == ["conv2d"]


def test_a_mul_or_div_by_a_number_folds_into_weight_and_bias():
    """Whisper's queries, q_proj(x) * 0.125, and a division by a number."""
    g = model("""
        - {name: fc, op: linear, inputs: [x], out_features: 16}
        - {name: scaled, op: mul, scalar: 0.125}
        - {name: fc2, op: linear, inputs: [x], out_features: 16, bias: false}
        - {name: halved, op: div, scalar: 2}
        - {name: out, op: add, inputs: [scaled, halved]}
        """, "{x: {shape: [batch, 5, 16]}}", "[out]")
    after, summary = check_pass(g, fold_batchnorm.run)
    assert ops(after) == ["linear", "linear", "add"]
    assert summary == "2 scalings by a number folded into conv/linear weights"
    np.testing.assert_allclose(after.weights.get(after.node("fc").weights["bias"]),
                               g.weights.get("fc.bias") * 0.125, rtol=1e-6)
    np.testing.assert_allclose(after.weights.get(after.node("fc2").weights["bias"]), 0.0)


def test_a_number_on_a_matmul_an_int_or_a_shared_output_stays():
    g = model("""
        - {name: fc, op: linear, inputs: [x], out_features: 16}
        - {name: scaled, op: mul, scalar: 0.5}
        - {name: again, op: add, inputs: [fc, scaled]}
        - {name: mm, op: matmul, inputs: [x, w]}
        - {name: scaled2, op: mul, scalar: 0.5}
        - {name: fc3, op: linear, inputs: [x], out_features: 16}
        - {name: zero, op: mul, scalar: 0.0}
        """, "{x: {shape: [batch, 5, 16]}, w: {shape: [16, 16]}}", "[again, scaled2, zero]")
    after, summary = check_pass(g, fold_batchnorm.run)
    assert summary == "" and ops(after) == ops(g)
