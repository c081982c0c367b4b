"""Convs over a sequence whose length is a dim (importers/composites.py): pointwise ones
(SqueezeBERT's q/k/v and feed-forward convs, grouped or not) import as GEMMs over the positions
and match PyTorch through the reference executor; a wider window over such a length stops in
one line (no compiler needed). unfold (ConvBERT's conv-kernel attention) imports as shifted
slices stacked and matches PyTorch at two sequence lengths."""

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


def test_a_wider_window_over_a_symbolic_length_stops_in_one_line(tmp_path):
    with pytest.raises(AitError) as info:
        import_case((F + "wide_sequence_conv", ["x:batch,8,seq"], DIMS, None), tmp_path, "wide")
    assert "a 1-d convolution over a length of symbolic size" in str(info.value)


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


def test_unfold_over_a_symbolic_length_is_shifted_slices_stacked(tmp_path):
    _, _, built = import_case((F + "sequence_unfold", ["x:batch,seq,6"], DIMS, None), tmp_path,
                              "unfold")
    _matches_torch(built, "sequence_unfold", [(2, 2, 6), (1, 9, 6)])


def test_unfold_of_an_image_takes_every_option(tmp_path):
    _, _, built = import_case((F + "image_unfold", ["x:batch,3,7,7"], ["batch=1:4:2"], None),
                              tmp_path, "image_unfold")
    _matches_torch(built, "image_unfold", [(2, 3, 7, 7)])
