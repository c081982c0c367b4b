"""Convs over a sequence whose length is a dim (importers/composites.py): pointwise ones
(SqueezeBERT's q/k/v and feed-forward convs, grouped or not) import as GEMMs over the positions;
depthwise ones of a wider window (ConvBERT's SeparableConv1D) as shifted slices times their
per-channel weights; other wide ones as unfold and a GEMM; unfold itself (ConvBERT's conv-kernel
attention) as shifted slices stacked; strided ones (wav2vec2's feature encoder, over audio of
length a*frames + b) as strided slices. Each matches PyTorch through the reference executor at
two sequence lengths (no compiler needed); a strided window over a length its stride does not
divide stops in one line."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.errors import AitError  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
F = "tests.importers.families:"
DIMS = ["batch=1:4:2", "seq=2:32:8"]


def test_pointwise_convs_over_a_symbolic_length_are_gemms(tmp_path):
    _, _, built = import_case((F + "sequence_convs", ["x:batch,seq,16"], DIMS, None), tmp_path,
                              "sequence_convs")
    assert not [n for n in built.nodes if n.op == "conv2d"]
    assert sorted(built.weight_names()) == ["dense.weight", "grouped.bias", "grouped.weight"]
    # the grouped conv's weight as PyTorch holds it; the ungrouped one a linear's [O, C]
    assert built.weights.get("grouped.weight").shape == (24, 4, 1)
    assert built.weights.get("dense.weight").shape == (8, 24)
    assert [n.op for n in built.nodes].count("linear") == 1
    x = np.random.default_rng(5).standard_normal((3, 11, 16)).astype(np.float32)
    (want,) = torch_outputs(F + "sequence_convs", {"x": x})
    got = run_reference(built, {"x": x})[built.outputs[0]]
    assert rel_error(got, want) < 1e-6


def _matches_torch(built, factory: str, shapes: list, dtype=np.float32, bound=1e-6):
    """The spec's reference against the module at each input shape (lengths the spec was not
    imported at: the slices keep the symbolic length)."""
    rng = np.random.default_rng(7)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32) if dtype == np.float32 else \
            rng.integers(3, 100, shape)
        want = torch_outputs(F + factory, {built.inputs[0]: x})[0]
        got = run_reference(built, {built.inputs[0]: x})[built.outputs[0]]
        assert got.shape == want.shape and rel_error(got, want) < bound, shape


def test_depthwise_convs_over_a_symbolic_length_are_shifted_slices(tmp_path):
    _, _, built = import_case((F + "depthwise_sequence_convs", ["x:batch,seq,16"], DIMS, None),
                              tmp_path, "depthwise")
    ops = [n.op for n in built.nodes]
    assert "conv2d" not in ops and ops.count("slice") >= 9 + 3
    # the weights as PyTorch holds them (bench --vs torch loads them back)
    assert built.weights.get("depthwise.weight").shape == (16, 1, 9)
    assert built.weights.get("dilated.weight").shape == (8, 1, 3)
    _matches_torch(built, "depthwise_sequence_convs", [(2, 3, 16), (1, 13, 16)])


def test_wider_windows_over_a_symbolic_length_are_unfold_and_a_gemm(tmp_path):
    _, _, built = import_case((F + "window_sequence_convs", ["x:batch,8,seq"], DIMS, None),
                              tmp_path, "windows")
    assert "conv2d" not in [n.op for n in built.nodes]
    assert built.weights.get("conv.weight").shape == (8, 8, 3)
    assert built.weights.get("grouped.weight").shape == (12, 2, 3)
    _matches_torch(built, "window_sequence_convs", [(2, 8, 2), (1, 8, 11)])


def test_strided_convs_over_a_length_their_strides_divide_are_strided_slices(tmp_path):
    """wav2vec2's feature encoder in small over raw audio of length 80*frames + 40 (the spec's
    input shape too): each conv's output length stays a polynomial, its taps strided slices."""
    _, _, built = import_case((F + "strided_conv_stack", ["x:batch,80*frames+40"],
                               ["batch=1:4:2", "frames=1:16:4"], None), tmp_path, "strided_stack")
    assert [str(d) for d in built.tensors[built.inputs[0]].shape] == ["batch", "80*frames + 40"]
    assert [str(d) for d in built.tensors[built.outputs[0]].shape] == ["batch", "4", "frames + 1"]
    assert "conv2d" not in [n.op for n in built.nodes]
    assert any(n.op == "slice" and n.attrs.get("step") == 5 for n in built.nodes)
    _matches_torch(built, "strided_conv_stack", [(2, 120), (1, 80 * 7 + 40)])


def test_a_strided_window_over_a_length_it_does_not_divide_stops_in_one_line(tmp_path):
    with pytest.raises(AitError) as info:
        import_case((F + "strided_sequence_conv", ["x:batch,8,seq"], ["seq=4:32:8"], None),
                    tmp_path, "strided")
    assert "a strided 1-d convolution over a length of symbolic size that its stride does not " \
        "divide: (seq - 1) // 2 + 1 outputs" in str(info.value)


def test_unfold_over_a_symbolic_length_is_shifted_slices_stacked(tmp_path):
    _, _, built = import_case((F + "sequence_unfold", ["x:batch,seq,6"], DIMS, None), tmp_path,
                              "unfold")
    _matches_torch(built, "sequence_unfold", [(2, 2, 6), (1, 9, 6)])


def test_unfold_of_an_image_takes_every_option(tmp_path):
    _, _, built = import_case((F + "image_unfold", ["x:batch,3,7,7"], ["batch=1:4:2"], None),
                              tmp_path, "image_unfold")
    _matches_torch(built, "image_unfold", [(2, 3, 7, 7)])


def test_convbert_matches_torch(tmp_path):
    pytest.importorskip("transformers")
    _, _, built = import_case((F + "convbert", ["input_ids:batch,seq:int64"],
                               ["batch=1:2:1", "seq=3:16:8"], None), tmp_path, "convbert")
    _matches_torch(built, "convbert", [(2, 5), (1, 16)], dtype=np.int64, bound=1e-5)


@pytest.mark.parametrize("cpu", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_wav2vec2_over_audio_of_symbolic_length_matches_torch(tmp_path, request, cpu):
    """Tiny Wav2Vec2Model (conv strides 5 and 2, kernels 10 and 3: 10*frames + 10 samples give
    `frames` frames) over raw audio whose length is the spec's expression: the strided convs as
    strided slices, the first one's group norm as means over the frames, the positional grouped
    conv as unfold; the reference (and, marked slow, a cpu build: 1.5 minutes on 2 loaded cores)
    against PyTorch at two lengths."""
    pytest.importorskip("transformers")
    spec, _, built = import_case((F + "wav2vec2", ["input_values:batch,10*frames+10"],
                                  ["batch=1:2:1", "frames=2:32:8"], None), tmp_path, "wav2vec2")
    assert "conv2d" not in [n.op for n in built.nodes]
    model = request.getfixturevalue("build_spec")(spec, name="wav2vec2_frames")[0] if cpu else None
    rng = np.random.default_rng(3)
    for shape in ((2, 30), (1, 170)):
        x = rng.standard_normal(shape).astype(np.float32)
        want = torch_outputs(F + "wav2vec2", {"input_values": x})
        frames = (shape[1] - 10) // 10
        got = model.run({"input_values": x}, {"frames": frames}) if cpu else \
            run_reference(built, {"input_values": x})  # the C API takes the dims' values
        for out, expected in zip(built.outputs, want):
            assert got[out].shape == expected.shape == (shape[0], frames, expected.shape[-1])
            assert rel_error(got[out], expected) < 1e-5, (out, shape)
