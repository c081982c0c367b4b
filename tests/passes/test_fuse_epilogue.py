import numpy as np
import pytest

from ait_build.passes import fuse_epilogue

from .helpers import check_pass, model, node_of, ops, target

X = "{x: {shape: [batch, 5, 16]}}"
IMG = "{image: {shape: [batch, 8, 8, 8]}}"


@pytest.mark.parametrize("act,approx,expect", [
    ("relu", "", "relu"), ("gelu", "", "gelu"), ("gelu", ", approximate: tanh", "gelu_tanh"),
    ("silu", "", "silu"), ("sigmoid", "", "sigmoid"), ("tanh", "", "tanh"),
    ("hardswish", "", "hardswish")])
def test_linear_bias_residual_activation(act, approx, expect):
    g = model(f"""
        - {{name: fc, op: linear, inputs: [x], out_features: 16, bias: false}}
        - {{name: b, op: parameter, shape: [16], weights: {{value: extra_bias}}}}
        - {{name: biased, op: add, inputs: [b, fc]}}
        - {{name: res, op: add, inputs: [biased, x]}}
        - {{name: act, op: {act}{approx}}}
        """, X, "[act]")
    after, summary = check_pass(g, fuse_epilogue.run)
    fc = node_of(after, "linear")
    assert ops(after) == ["linear"]  # the bias parameter read became the weight role
    assert fc.attrs["activation"] == expect and fc.inputs == ["x", "x"] and fc.outputs == ["act"]
    assert fc.weights["bias"] == "extra_bias"
    assert summary == ("1 bias adds fused, 1 residual adds fused, 1 activations fused, "
                       "1 parameter reads dropped")


def test_bias_add_onto_an_existing_bias_sums_them():
    g = model("""
        - {name: conv, op: conv2d, out_channels: 8, kernel: 3, padding: 1}
        - {name: b, op: parameter, shape: [1, 1, 1, 8], weights: {value: shift}}
        - {name: biased, op: add, inputs: [conv, b]}
        - {name: out, op: relu}
        """, IMG, "[out]")
    after, _ = check_pass(g, fuse_epilogue.run)
    conv = node_of(after, "conv2d")
    assert ops(after) == ["conv2d"] and conv.weights["bias"] == "conv.fused_bias"
    np.testing.assert_allclose(after.weights.get("conv.fused_bias"),
                               g.weights.get("conv.bias") + g.weights.get("shift").ravel())


def test_residual_computed_later_moves_the_conv_down():
    g = model("""
        - {name: main, op: conv2d, out_channels: 8, kernel: 1}
        - {name: side, op: conv2d, inputs: [image], out_channels: 8, kernel: 3, padding: 1}
        - {name: sum, op: add, inputs: [main, side]}
        - {name: out, op: relu}
        """, IMG, "[out]")
    after, summary = check_pass(g, fuse_epilogue.run)
    assert [n.name for n in after.nodes] == ["side", "main"]
    assert after.node("main").inputs == ["image", "side"]
    assert after.node("main").attrs["activation"] == "relu"
    assert summary == "1 residual adds fused, 1 activations fused"


def test_matmul_takes_a_vector_as_residual_and_stops_at_the_activation():
    g = model("""
        - {name: mm, op: matmul, inputs: [x, x], transpose_b: true}
        - {name: b, op: parameter, shape: [5], weights: {value: row_bias}}
        - {name: biased, op: add, inputs: [mm, b]}
        - {name: act, op: relu}
        - {name: late, op: add, inputs: [act, act]}
        """, X, "[late]")
    after, _ = check_pass(g, fuse_epilogue.run)
    mm = node_of(after, "matmul")
    assert ops(after) == ["parameter", "matmul", "add"]
    assert mm.inputs == ["x", "x", "b"] and mm.attrs["activation"] == "relu"


def test_shared_or_growing_intermediates_are_not_fused():
    g = model("""
        - {name: fc, op: linear, inputs: [x], out_features: 16}
        - {name: a, op: relu}
        - {name: b, op: add, inputs: [fc, a]}
        - {name: fc2, op: linear, inputs: [x], out_features: 1}
        - {name: c, op: add, inputs: [fc2, x]}
        """, X, "[b, c]")
    after, summary = check_pass(g, fuse_epilogue.run)
    assert summary == "" and ops(after) == ops(g)


def test_capability_off():
    g = model("""
        - {name: fc, op: linear, inputs: [x], out_features: 16}
        - {name: a, op: relu}
        """, X, "[a]")
    after, summary = check_pass(g, fuse_epilogue.run, target("cpu", fused_epilogue=False))
    assert summary == "" and ops(after) == ["linear", "relu"]


@pytest.mark.parametrize("clip,expect,bounds", [
    ("relu6", "relu6", None), ("hardtanh, min_val: 0.0, max_val: 6.0", "relu6", None),
    ("clamp, min: 0, max: 6", "relu6", None), ("clamp, min: 0", "relu", None),
    ("hardtanh", "hardtanh", (-1.0, 1.0)),
    ("hardtanh, min_val: -0.5, max_val: 2.0", "hardtanh", (-0.5, 2.0)),
    ("clamp, max: 0.25", "hardtanh", (float("-inf"), 0.25)),
    ("clamp, min: -0.5", "hardtanh", (-0.5, float("inf")))])
def test_clamps_become_relu6_relu_or_hardtanh(clip, expect, bounds):
    g = model(f"""
        - {{name: conv, op: conv2d, out_channels: 8, kernel: 3, padding: 1}}
        - {{name: out, op: {clip}}}
        """, IMG, "[out]")
    after, summary = check_pass(g, fuse_epilogue.run)
    conv = node_of(after, "conv2d")
    assert ops(after) == ["conv2d"] and conv.attrs["activation"] == expect, conv.attrs
    if bounds:
        assert (conv.attrs["hardtanh_min"], conv.attrs["hardtanh_max"]) == bounds
    assert summary == "1 activations fused"


def test_leaky_relu_becomes_the_activation_with_its_slope():
    g = model("""
        - {name: conv, op: conv2d, out_channels: 8, kernel: 3, padding: 1}
        - {name: out, op: leaky_relu, negative_slope: 0.1}
        """, IMG, "[out]")
    after, summary = check_pass(g, fuse_epilogue.run)
    conv = node_of(after, "conv2d")
    assert ops(after) == ["conv2d"] and conv.attrs["activation"] == "leaky_relu"
    assert conv.attrs["leaky_slope"] == 0.1 and summary == "1 activations fused"


def test_the_importers_hardsigmoid_becomes_one_activation():
    g = model("""
        - {name: fc, op: linear, inputs: [x], out_features: 16}
        - {name: shifted, op: add, scalar: 3.0}
        - {name: clipped, op: relu6}
        - {name: gate, op: div, scalar: 6.0}
        """, X, "[gate]")
    after, summary = check_pass(g, fuse_epilogue.run)
    fc = node_of(after, "linear")
    assert ops(after) == ["linear"] and fc.attrs["activation"] == "hardsigmoid"
    assert fc.outputs == ["gate"] and summary == "1 activations fused"


@pytest.mark.parametrize("tail,outputs", [
    ("- {name: gate, op: div, scalar: 5.0}", "[gate]"),  # not hardsigmoid's 6
    ("- {name: gate, op: div, scalar: 6.0}", "[gate, clipped]")])  # the clip is needed too
def test_near_hardsigmoid_chains_stay(tail, outputs):
    g = model(f"""
        - {{name: fc, op: linear, inputs: [x], out_features: 16}}
        - {{name: shifted, op: add, scalar: 3.0}}
        - {{name: clipped, op: relu6}}
        {tail}
        """, X, outputs)
    after, summary = check_pass(g, fuse_epilogue.run)
    assert ops(after) == ["linear", "add", "relu6", "div"] and summary == ""


def test_a_layer_scale_folds_into_the_weights_and_the_residual_follows():
    """ConvNeXt's block tail: gamma * linear(x) + x becomes one linear with scaled weight and
    bias and x as its residual."""
    g = model("""
        - {name: fc, op: linear, inputs: [x], out_features: 16}
        - {name: gamma, op: parameter, shape: [1, 1, 16], weights: {value: layer_scale}}
        - {name: scaled, op: mul, inputs: [gamma, fc]}
        - {name: out, op: add, inputs: [scaled, x]}
        """, "{x: {shape: [batch, 5, 16]}}", "[out]")
    after, summary = check_pass(g, fuse_epilogue.run)
    fc = node_of(after, "linear")
    assert ops(after) == ["linear"] and fc.inputs == ["x", "x"] and fc.outputs == ["out"]
    gamma = g.weights.get("layer_scale").reshape(-1, 1)
    np.testing.assert_allclose(after.weights.get(fc.weights["weight"]),
                               g.weights.get("fc.weight") * gamma, rtol=1e-6)
    assert summary == ("1 residual adds fused, 1 channel scales fused, "
                       "1 parameter reads dropped")


def test_a_scale_after_the_residual_or_of_another_layout_stays():
    g = model("""
        - {name: fc, op: linear, inputs: [x], out_features: 16, weight_layout: in_out}
        - {name: gamma, op: parameter, shape: [16], weights: {value: layer_scale}}
        - {name: scaled, op: mul, inputs: [fc, gamma]}
        - {name: fc2, op: linear, inputs: [x, x], out_features: 16}
        - {name: scaled2, op: mul, inputs: [fc2, gamma]}
        """, "{x: {shape: [batch, 5, 16]}}", "[scaled, scaled2]")
    after, summary = check_pass(g, fuse_epilogue.run)
    assert ops(after).count("mul") == 2 and summary == ""


@pytest.mark.parametrize("act,expect", [("gelu", "gelu"), ("relu6", "relu6")])
def test_an_activation_after_a_reshape_of_the_conv_output(act, expect):
    """A conv1d imports as conv2d over [N, C, 1, L] and a reshape back to [N, C, L]: the
    activation after the reshape goes into the conv's epilogue and the reshape reads its output."""
    g = model(f"""
        - {{name: conv, op: conv2d, out_channels: 8, kernel: [1, 3], padding: [0, 1]}}
        - {{name: flat, op: reshape, shape: [batch, 8, 8]}}
        - {{name: act, op: {act}}}
        - {{name: out, op: add, inputs: [act, act]}}
        """, "{image: {shape: [batch, 8, 1, 8]}}", "[out]")
    after, summary = check_pass(g, fuse_epilogue.run)
    conv, flat = node_of(after, "conv2d"), node_of(after, "reshape")
    assert ops(after) == ["conv2d", "reshape", "add"] and conv.attrs["activation"] == expect
    assert flat.inputs == [conv.output] and flat.outputs == ["act"]
    assert summary == "1 activations fused"


def test_a_reshape_read_twice_or_an_output_keeps_its_activation():
    g = model("""
        - {name: conv, op: conv2d, out_channels: 8, kernel: [1, 3], padding: [0, 1]}
        - {name: flat, op: reshape, shape: [batch, 8, 8]}
        - {name: act, op: gelu}
        - {name: conv2, op: conv2d, inputs: [image], out_channels: 8, kernel: [1, 3], padding: [0, 1]}
        - {name: flat2, op: reshape, shape: [batch, 8, 8]}
        - {name: act2, op: gelu}
        """, "{image: {shape: [batch, 8, 1, 8]}}", "[act, flat2, act2]")
    after, summary = check_pass(g, fuse_epilogue.run)
    assert ops(after).count("gelu") == 1 and after.node("conv").attrs["activation"] == "gelu"
    assert after.node("conv2").attrs["activation"] == "none"  # flat2 is an output itself


def test_fusing_many_layers_follows_the_edits_instead_of_rescanning(monkeypatch):
    """Uses was rebuilt (a scan of the whole graph) after every fused op and for every softmax:
    quadratic, minutes for a 20000-node model. Now once per pass, plus once per attention match."""
    from ait_build.passes import fuse_attention, rewrite
    layers = "".join(f"""
        - {{name: fc{i}, op: linear, out_features: 16}}
        - {{name: res{i}, op: add, inputs: [fc{i}, x]}}
        - {{name: act{i}, op: gelu}}
        - {{name: sm{i}, op: softmax}}""" for i in range(12))
    g = model(layers, X, "[sm11]")
    built, scan = [], rewrite.Uses.__init__

    def counted(self, graph):
        built.append(graph)
        scan(self, graph)
    monkeypatch.setattr(rewrite.Uses, "__init__", counted)
    after, summary = check_pass(g, lambda graph, tgt: fuse_epilogue.run(graph, tgt)
                                + fuse_attention.run(graph, tgt))
    assert ops(after) == ["linear", "softmax"] * 12, ops(after)
    assert summary.startswith("12 residual adds fused, 12 activations fused"), summary
    assert len(built) <= 4, len(built)
