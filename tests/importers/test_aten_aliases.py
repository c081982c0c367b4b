"""ATen's alias spellings (aten.multiply, aten.greater, aten.clip, ...), which torch.export keeps
as the model wrote them, import as the ops they name (importers/torch_ops.py), checked against
PyTorch through the reference executor (no compiler)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
ALIASES = "tests.importers.families:aliases"


def test_alias_spellings_import_as_their_ops(tmp_path):
    _, _, built = import_case((ALIASES, ["x:batch,5", "y:batch,5"], ["batch=1:4:2"], None),
                              tmp_path, "aliases")
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal((3, 5)).astype(np.float32) for _ in range(2))
    y[0, :2] = x[0, :2]  # equal elements: not_equal, greater_equal and less_equal matter
    (want,) = torch_outputs(ALIASES, {"x": x, "y": y})
    got = run_reference(built, {"x": x, "y": y})[built.outputs[0]]
    assert rel_error(got, want) < 1e-6


def test_addcmul_and_addcdiv_import_as_their_terms(tmp_path):
    """input + value * t1 * t2 (and / t2): timm's ResMLP had no translation of aten.addcmul."""
    case = "tests.importers.families:addcmul_affine"
    _, _, built = import_case((case, ["x:batch,5", "y:batch,5"], ["batch=1:4:2"], None),
                              tmp_path, "addcmul")
    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal((3, 5)).astype(np.float32) for _ in range(2))
    (want,) = torch_outputs(case, {"x": x, "y": y})
    got = run_reference(built, {"x": x, "y": y})[built.outputs[0]]
    assert rel_error(got, want) < 1e-6
