"""Tensors filled at a size that is a product of dims (Lower.fill: a constant of size 1 there,
expanded): timm's Sequencer's LSTM zero states over batch*rows sequences, full and ones_like
over a flattened batch; against PyTorch through the reference and a cpu build."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
CASE = "tests.importers.families:product_fills"


def test_product_fills_matches_pytorch(tmp_path, build_spec):
    spec, _, graph = import_case((CASE, ["x:batch,8,6,4"], ["batch=1:4:2"], None), tmp_path,
                                 "product_fills")
    model, _, _ = build_spec(spec, name="product_fills")
    for batch in (1, 3):
        inputs = {"x": np.random.default_rng(batch).standard_normal((batch, 8, 6, 4))
                  .astype(np.float32)}
        want = torch_outputs(CASE, inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            for out, expected in zip(graph.outputs, want):
                assert rel_error(got[out], expected) < 2e-6, (out, rel_error(got[out], expected))
