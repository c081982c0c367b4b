import numpy as np

from ait_build.passes import pad_channels

from .helpers import check_pass, model, node_of, ops, target

STEM = """
- {name: stem, op: conv2d, out_channels: 16, kernel: 3, stride: 2, padding: 1}
- {name: side, op: conv2d, inputs: [image], out_channels: 16, kernel: 3, stride: 2, padding: 1}
- {name: y, op: add, inputs: [stem, side]}
- {name: pool, op: global_avg_pool}
- {name: fc, op: linear, out_features: 4}
"""
IMG = "{image: {shape: [batch, 8, 8, 3]}}"


def test_cpu_alignment_one_changes_nothing():
    g = model(STEM, IMG, "[fc]")
    after, summary = check_pass(g, pad_channels.run, target("cpu"))
    assert summary == ""
    assert [(n.op, n.inputs, n.weights) for n in after.nodes] == \
        [(n.op, n.inputs, n.weights) for n in g.nodes]


def test_cuda_pads_the_three_channel_stem_once_for_both_readers():
    g = model(STEM, IMG, "[fc]")
    after, summary = check_pass(g, pad_channels.run, target("h200"))
    assert target("h200").cap("channel_alignment") == 8
    assert ops(after) == ["pad", "conv2d", "conv2d", "add", "global_avg_pool", "linear"]
    pad = node_of(after, "pad")
    assert pad.attrs["pads"] == (0, 0, 0, 0, 0, 0, 0, 5)
    assert [str(d) for d in after.tensors[pad.output].shape] == ["batch", "8", "8", "8"]
    stem = after.node("stem")
    assert stem.inputs == [pad.output] and after.node("side").inputs == [pad.output]
    padded = after.weights.get(stem.weights["weight"])
    assert padded.shape == (16, 8, 3, 3) and not padded[:, 3:].any()
    np.testing.assert_array_equal(padded[:, :3], g.weights.get("stem.weight"))
    assert after.node("fc").inputs == ["pool"]  # 16 features are aligned already
    assert summary == "2 conv/linear inputs padded to a multiple of 8 channels, 1 pad nodes added"


def test_linear_features_and_depthwise_conv():
    g = model("""
        - {name: dw, op: conv2d, out_channels: 3, kernel: 3, padding: 1, groups: 3}
        - {name: flat, op: flatten}
        - {name: fc, op: linear, out_features: 8}
        """, "{image: {shape: [batch, 4, 4, 3]}}", "[fc]")
    after, _ = check_pass(g, pad_channels.run, target("h200"))
    assert after.node("dw").inputs == ["image"]  # grouped convs keep their channels
    assert after.weights.get(after.node("fc").weights["weight"]).shape == (8, 48)  # 48 % 8 == 0
    g2 = model("- {name: fc, op: linear, out_features: 8}", "{x: {shape: [batch, 13]}}", "[fc]")
    after2, _ = check_pass(g2, pad_channels.run, target("h200"))
    assert ops(after2) == ["pad", "linear"]
    assert after2.weights.get(after2.node("fc").weights["weight"]).shape == (8, 16)
