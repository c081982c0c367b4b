"""ATen's alias spellings (aten.multiply, aten.greater, aten.clip, ...), which torch.export keeps
as the model wrote them, import as the ops they name (importers/torch_ops.py), checked against
PyTorch through the reference executor (no compiler)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import families  # noqa: E402
from cases import rel_error  # noqa: E402

from ait_build.importers.from_torch import import_torch  # noqa: E402
from ait_build.importers.options import dims_for, parse_dim, parse_input  # noqa: E402
from ait_build.importers.simplify import simplify  # noqa: E402
from ait_build.importers.write import write_spec  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch


def test_alias_spellings_import_as_their_ops(tmp_path):
    inputs = [parse_input("x:batch,5"), parse_input("y:batch,5")]
    graph = import_torch("tests.importers.families:aliases", None, inputs,
                         dims_for(inputs, [parse_dim("batch=1:4:2")]), "aliases")
    simplify(graph)
    _, _, built = write_spec(graph, str(tmp_path / "aliases.yaml"), "test")
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal((3, 5)).astype(np.float32) for _ in range(2))
    y[0, :2] = x[0, :2]  # equal elements: not_equal, greater_equal and less_equal matter
    with torch.no_grad():
        want = families.aliases()(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    got = run_reference(built, {"x": x, "y": y})[built.outputs[0]]
    assert rel_error(got, want) < 1e-6
