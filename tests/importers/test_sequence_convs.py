"""Convs over a sequence whose length is a dim (importers/composites.py): pointwise ones
(SqueezeBERT's q/k/v and feed-forward convs, grouped or not) import as GEMMs over the positions
and match PyTorch through the reference executor; a wider window over such a length stops in
one line (no compiler needed)."""

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
