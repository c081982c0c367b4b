import numpy as np

from ait_build.passes import pad_channels

from .helpers import check_pass, model, node_of, ops, target

STEM = """
- {name: stem, op: conv2d, out_channels: 16, kernel: 1}
- {name: side, op: conv2d, inputs: [image], out_channels: 12, kernel: 3, stride: 2, padding: 1}
- {name: pool, op: global_avg_pool, inputs: [stem]}
- {name: fc, op: linear, out_features: 4}
"""
IMG = "{image: {shape: [batch, 8, 8, 3]}}"


def test_cpu_alignment_one_changes_nothing():
    g = model(STEM, IMG, "[fc, side]")
    after, summary = check_pass(g, pad_channels.run, target("cpu"))
    assert summary == ""
    assert [(n.op, n.inputs, n.weights) for n in after.nodes] == \
        [(n.op, n.inputs, n.weights) for n in g.nodes]


def test_cuda_pads_the_three_channel_image_once_for_both_readers():
    """A pointwise conv and one of unaligned output channels keep the pad (their windows are
    not gathered into GEMM rows); both read the one pad."""
    g = model(STEM, IMG, "[fc, side]")
    after, summary = check_pass(g, pad_channels.run, target("h200"))
    assert target("h200").cap("channel_alignment") == 8
    assert ops(after) == ["pad", "conv2d", "conv2d", "global_avg_pool", "linear"]
    pad = node_of(after, "pad")
    assert pad.attrs["pads"] == (0, 0, 0, 0, 0, 0, 0, 5)
    assert [str(d) for d in after.tensors[pad.output].shape] == ["batch", "8", "8", "8"]
    stem = after.node("stem")
    assert stem.inputs == [pad.output] and after.node("side").inputs == [pad.output]
    padded = after.weights.get(after.node("side").weights["weight"])
    assert padded.shape == (12, 8, 3, 3) and not padded[:, 3:].any()
    np.testing.assert_array_equal(padded[:, :3], g.weights.get("side.weight"))
    assert after.node("fc").inputs == ["pool"]  # 16 features are aligned already
    assert summary == "2 conv/linear inputs padded to a multiple of 8 channels, 1 pad nodes added"


STEM_WINDOWS = """
- {name: stem7, op: conv2d, out_channels: 16, kernel: 7, stride: 2, padding: 3}
- {name: stem3, op: conv2d, inputs: [image], out_channels: 32, kernel: 3, stride: 2, padding: 1}
- {name: patch, op: conv2d, inputs: [image], out_channels: 8, kernel: 4, stride: 4}
- {name: point, op: conv2d, inputs: [image], out_channels: 16, kernel: 1}
"""


def test_stem_windows_over_few_channels_are_left_unpadded():
    """Convs over fewer channels than the alignment whose windows span several pixels, with
    aligned output channels, read the image as it is: the GPU lowering gathers their windows
    into GEMM rows (gathers_windows); a pointwise conv of the same image is still padded."""
    g = model(STEM_WINDOWS, IMG, "[stem7, stem3, patch, point]")
    after, summary = check_pass(g, pad_channels.run, target("h200"))
    assert [n.name for n in after.nodes if pad_channels.gathers_windows(after, n, 8)] == \
        ["stem7", "stem3", "patch"]
    for name in ("stem7", "stem3", "patch"):
        node = after.node(name)
        assert node.inputs == ["image"] and node.weights["weight"] == f"{name}.weight"
    assert after.node("point").inputs == [node_of(after, "pad").output]
    assert summary == ("1 conv/linear inputs padded to a multiple of 8 channels, 1 pad nodes "
                       "added, 3 convs left unpadded: their windows are gathered into GEMM rows")
    assert not any(pad_channels.gathers_windows(g, n, 1) for n in g.nodes)  # cpu, mi250
    assert not any(pad_channels.gathers_windows(g, n, 2) for n in g.nodes)  # 3 channels >= 2


def test_window_wider_than_the_strip_is_padded_instead():
    """A window whose input rows do not fit the im2col kernel's shared-memory strip (a 31x31 conv
    dilated 8 over 7 channels: 31 rows of 241 pixels) keeps the pad + implicit-GEMM conv; a
    21x21 one undilated is gathered. The GPU lowering's tiles fit that strip."""
    from ait_build.backends.gpu.im2col import STRIP_BYTES, tile_pixels
    g = model("""
        - {name: wide, op: conv2d, out_channels: 8, kernel: 31, padding: 120, dilation: 8}
        - {name: near, op: conv2d, inputs: [image], out_channels: 8, kernel: 21, padding: 10}
        """, "{image: {shape: [batch, 64, 64, 7]}}", "[wide, near]")
    assert [n.name for n in g.nodes if pad_channels.gathers_windows(g, n, 8)] == ["near"]
    resnet_stem = dict(kh=7, kw=7, sh=2, sw=2, dh=1, dw=1)
    assert tile_pixels(resnet_stem, 3, 2) == 64
    near = dict(kh=21, kw=21, sh=1, sw=1, dh=1, dw=1)
    tile = tile_pixels(near, 7, 4)
    assert 1 <= tile < 64 and 21 * (tile - 1 + 21) * 7 * 4 <= STRIP_BYTES


def test_im2col_channels_gathers_aligned_convs_into_as_many_outputs():
    """Below a target's im2col_channels (the sm90 targets: 64), a conv over aligned channels is
    gathered too when it has at least that many outputs; fewer outputs keep the implicit GEMM
    (its rows would cost more to write than the narrow GEMM saves)."""
    g = model("""
        - {name: up, op: conv2d, out_channels: 64, kernel: 3, padding: 1}
        - {name: level, op: conv2d, inputs: [image], out_channels: 16, kernel: 3, padding: 1}
        - {name: point, op: conv2d, inputs: [image], out_channels: 64, kernel: 1}
        - {name: wide, op: conv2d, inputs: [up], out_channels: 128, kernel: 3, padding: 1}
        """, "{image: {shape: [batch, 8, 8, 16]}}", "[level, point, wide]")
    assert [n.name for n in g.nodes if pad_channels.gathers_windows(g, n, 8, 64)] == ["up"]
    assert not any(pad_channels.gathers_windows(g, n, 8) for n in g.nodes)


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
