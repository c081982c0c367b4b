import numpy as np

from ait_build.passes import pad_channels, pad_out_channels

from .helpers import assert_unpadded, check_pass, model, ops, target

HEADS = """
- {name: head, op: conv2d, out_channels: 255, kernel: 1, activation: sigmoid}
- {name: seg, op: conv2d, inputs: [x], out_channels: 21, kernel: 3, padding: 1, bias: false}
- {name: even, op: conv2d, inputs: [x], out_channels: 24, kernel: 3, padding: 1}
- {name: res, op: conv2d, inputs: [x, r], out_channels: 3, kernel: 3, padding: 1}
- {name: grouped, op: conv2d, inputs: [x], out_channels: 12, kernel: 3, padding: 1, groups: 4}
- {name: pool, op: global_avg_pool, inputs: [x]}
- {name: vocab, op: linear, inputs: [pool], out_features: 37}
- {name: gpt, op: linear, inputs: [pool], out_features: 11, weight_layout: in_out}
"""
INPUTS = "{x: {shape: [batch, 6, 5, 16]}, r: {shape: [batch, 6, 5, 3]}}"
OUTPUTS = "[head, seg, even, res, grouped, vocab, gpt]"


def test_unaligned_16bit_outputs_are_padded_and_sliced_back():
    """A detection head's 255 channels, a segmentation head's 21, a conv of 3 with a fused
    residual (padded too), a linear's 37 and an [in, out] linear's 11 get zero filters up to a
    multiple of 8 and a slice after; aligned outputs and grouped convs keep theirs. The reference
    outputs are unchanged (check_pass)."""
    g = model(HEADS, INPUTS, OUTPUTS, dtype="float16")
    after, summary = check_pass(g, pad_out_channels.run, target("h200"), rtol=2e-3, atol=2e-3)
    assert summary == "5 conv/linear outputs padded to a multiple of 8 channels and sliced back"
    assert ops(after) == ["conv2d", "slice", "conv2d", "slice", "conv2d", "pad", "conv2d", "slice",
                          "conv2d", "global_avg_pool", "linear", "slice", "linear", "slice"]
    res = after.node("res")
    assert res.inputs[1] == "r.channel_pad" and after.node("r.channel_pad").attrs["pads"][-1] == 5
    head = after.node("head")
    assert head.attrs["out_channels"] == 256 and after.tensors[head.output].shape[-1].value == 256
    assert after.node("head.channels").outputs == ["head"] and after.outputs == g.outputs
    w = after.weights.get(head.weights["weight"])
    b = after.weights.get(head.weights["bias"])
    assert w.shape == (256, 16, 1, 1) and b.shape == (256,) and not w[255:].any() and b[255] == 0
    np.testing.assert_array_equal(w[:255], g.weights.get("head.weight"))
    assert after.node("seg").attrs["out_channels"] == 24 and "bias" not in after.node("seg").weights
    assert after.node("vocab").attrs["out_features"] == 40
    gpt = after.weights.get(after.node("gpt").weights["weight"])  # [in, out]: padded along out
    assert gpt.shape == (16, 16) and not gpt[:, 11:].any()
    for name in ("even", "grouped"):
        assert after.node(name).weights == g.node(name).weights


def test_float32_and_aligned_targets_change_nothing():
    assert_unpadded(HEADS, INPUTS, OUTPUTS, pad_out_channels.run)


SQUEEZE = """
- {name: se, op: conv2d, out_channels: 36, kernel: 1, activation: silu}
- {name: ex, op: conv2d, out_channels: 16, kernel: 1}
- {name: sg, op: conv2d, inputs: [x], out_channels: 36, kernel: 1, activation: sigmoid}
- {name: ex2, op: conv2d, out_channels: 16, kernel: 1}
"""


def test_a_channel_pad_after_the_slice_reads_the_padded_output():
    """EfficientNet's squeeze-excitation FCs: 36 channels, and the next conv's input pad
    (pad_channels) to 40. Where the activation maps 0 to 0 (silu) the FC is padded to 40: its
    extra channels are zeros, so the next conv reads the wide output and neither slice nor pad
    is left. A sigmoid's would be 0.5: 36 is even (the kernels take it), so that FC keeps its
    channels and the pad stays."""
    g = model(SQUEEZE, "{x: {shape: [batch, 6, 5, 16]}}", "[ex, ex2]", dtype="float16")
    g, _ = check_pass(g, pad_channels.run, target("h200"), rtol=2e-3, atol=2e-3)
    after, summary = check_pass(g, pad_out_channels.run, target("h200"), rtol=2e-3, atol=2e-3)
    assert summary == ("1 conv/linear outputs padded to a multiple of 8 channels and sliced "
                       "back, 1 channel pads after them read the padded output instead")
    assert ops(after) == ["conv2d", "conv2d", "conv2d", "pad", "conv2d"]
    assert after.node("sg").attrs["out_channels"] == 36
    assert after.node("ex").inputs == [after.node("se").output] == ["se.wide"]


def test_even_widths_other_readers_keep_their_channels():
    """ShuffleNetV2's 58-channel branches: the kernels store them as 4-byte pairs, and a slice
    after them would be a kernel more, so they stay; an odd width (the 21-class head) does not."""
    g = model("""
        - {name: branch, op: conv2d, out_channels: 58, kernel: 1, activation: relu}
        - {name: cat, op: concat, inputs: [branch, branch], axis: 3}
        - {name: head, op: conv2d, inputs: [x], out_channels: 21, kernel: 1}
        """, "{x: {shape: [batch, 6, 5, 16]}}", "[cat, head]", dtype="float16")
    after, summary = check_pass(g, pad_out_channels.run, target("h200"), rtol=2e-3, atol=2e-3)
    assert after.node("branch").attrs["out_channels"] == 58
    assert after.node("head").attrs["out_channels"] == 24
    assert summary == "1 conv/linear outputs padded to a multiple of 8 channels and sliced back"
