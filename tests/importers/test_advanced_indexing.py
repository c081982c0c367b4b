"""Indexing with integer tensors on several axes (x[rows, ids], x[:, i, :, j]) imports as one
gather over the indexed axes merged (torch_ops._advanced_index), and the cpu build computes what
PyTorch does at two batch sizes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
CASE = "tests.importers.families:advanced_indexing"


def test_several_index_tensors_import_as_one_gather(tmp_path, build_spec):
    spec, _, graph = import_case((CASE, ["x:batch,6,5,4", "ids:batch,3:int64"], ["batch=1:4:2"],
                                  None), tmp_path, "advanced_indexing")
    assert sum(n.op == "gather" for n in graph.nodes) == 4  # three indexings and the flip
    model, _, _ = build_spec(spec, name="advanced_indexing")
    for batch in (1, 3):
        rng = np.random.default_rng(batch)
        inputs = {"x": rng.standard_normal((batch, 6, 5, 4)).astype(np.float32),
                  "ids": rng.integers(-5, 5, (batch, 3)).astype(np.int64)}
        want = torch_outputs(CASE, inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            for out, expected in zip(graph.outputs, want):
                np.testing.assert_allclose(got[out], expected, rtol=1e-6, atol=1e-6, err_msg=out)
