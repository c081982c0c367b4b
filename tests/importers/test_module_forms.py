"""Small modules of forms the timm sweeps found (tests/importers/families.py), imported and
checked against PyTorch through the reference and a cpu build at two batch sizes:

- slice assignment into a computed tensor (MViTv2's `attn[:, :, 1:, 1:] = ...`, which
  torch.export writes as aten.copy into a slice followed by slice_scatter);
- tensors filled at a size that is a product of dims (Lower.fill: a constant of size 1 there,
  expanded): Sequencer's LSTM zero states over batch*rows sequences, full and ones_like over a
  flattened batch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("name,tolerance", [("slice_assign", 1e-6), ("product_fills", 2e-6)])
def test_module_matches_pytorch(name, tolerance, tmp_path, build_spec):
    case = f"tests.importers.families:{name}"
    spec, _, graph = import_case((case, ["x:batch,8,6,4"], ["batch=1:4:2"], None), tmp_path, name)
    model, _, _ = build_spec(spec, name=name)
    for batch in (1, 3):
        inputs = {"x": np.random.default_rng(batch).standard_normal((batch, 8, 6, 4))
                  .astype(np.float32)}
        want = torch_outputs(case, inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            for out, expected in zip(graph.outputs, want):
                assert rel_error(got[out], expected) < tolerance, (out, rel_error(got[out],
                                                                                 expected))
