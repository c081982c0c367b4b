"""The ONNX package's own backend node tests (onnx.backend.test.case.node) run through the ONNX
importer and the reference executor: every case made only of operators the importer claims must
either match ONNX's expected outputs or be refused with a report line (an auto_pad, a 3-d pool,
an element type we lack), never give other numbers and never crash. Most of them match."""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from ait_build.errors import AitError  # noqa: E402
from ait_build.importers.from_onnx import import_onnx  # noqa: E402
from ait_build.importers.onnx_ops import HANDLERS  # noqa: E402
from ait_build.importers.simplify import simplify  # noqa: E402
from ait_build.importers.write import write_spec  # noqa: E402
from ait_build.reference import run_reference  # noqa: E402

MATCHED_AT_LEAST = 190  # of about 600 cases over the claimed operators (199 when written)


def claimed_cases():
    from onnx.backend.test.case import node
    return [c for c in node.collect_testcases(None)
            if {n.op_type for n in c.model.graph.node} <= set(HANDLERS) | {"Constant"}]


def test_node_cases_match_or_are_refused(tmp_path):
    matched, refused = [], []
    for case in claimed_cases():
        path = str(tmp_path / f"{case.name}.onnx")
        onnx.save(case.model, path)
        try:
            graph = import_onnx(path, [], [], "m")
            simplify(graph)
            _, _, model = write_spec(graph, str(tmp_path / f"{case.name}.yaml"), "node case")
        except AitError:
            refused.append(case.name)
            continue
        for inputs, outputs in case.data_sets:
            feed = {i.name: np.asarray(v) for i, v in zip(case.model.graph.input, inputs)}
            try:
                got = run_reference(model, feed)
            except AitError:  # an input our executor refuses (a float64 array for a float32 input)
                refused.append(case.name)
                break
            for name, want in zip(model.outputs, outputs):
                np.testing.assert_allclose(got[name], want, rtol=max(case.rtol, 1e-5),
                                           atol=max(case.atol, 1e-6), err_msg=case.name)
        else:
            matched.append(case.name)
        os.unlink(path)
    assert len(matched) >= MATCHED_AT_LEAST, (len(matched), sorted(refused))
