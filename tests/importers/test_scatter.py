"""Writes by position (importers/scatter.py; torch_scatter.py, onnx_positional.py): masks set
and added to, rows put by a repeated index, scatter and its reductions, index_add/copy/fill
against PyTorch through the reference and a cpu build; ScatterElements and ScatterND against
ONNX Runtime; the forms it cannot compose as clear errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.errors import AitError  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
CASE = "tests.importers.families:scatters"


def test_scatters_match_pytorch(tmp_path, build_spec):
    spec, _, graph = import_case((CASE, ["x:batch,6,5", "ids:batch,3:int64"], ["batch=1:4:2"],
                                  None), tmp_path, "scatters")
    model, _, _ = build_spec(spec, name="scatters")
    for batch in (1, 3):
        rng = np.random.default_rng(batch)
        inputs = {"x": (rng.standard_normal((batch, 6, 5)) * 2).astype(np.float32),
                  "ids": rng.integers(0, 5, (batch, 3)).astype(np.int64)}  # repeats included
        want = torch_outputs(CASE, inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            for out, expected in zip(graph.outputs, want):
                assert rel_error(got[out], expected) < 2e-6, (out, rel_error(got[out], expected))


class PerElementMask(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        y[x > 0] = x[x > 0] * 2  # one value per selected element
        return y


def per_element_mask():
    return PerElementMask()


def test_a_mask_assigned_one_value_per_element_is_a_clear_error(tmp_path):
    with pytest.raises(AitError, match="bool mask|one value per selected element"):
        import_case(("tests.importers.test_scatter:per_element_mask", ["x:batch,4"],
                     ["batch=1:4:2"], None), tmp_path, "per_element_mask")


def test_onnx_scatters_match_onnxruntime(tmp_path, build_spec):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    from test_activations import onnx_built

    def ints(name, dims, values):
        return helper.make_tensor(name, TensorProto.INT64, dims, values)

    inits = [ints("cols", [2, 3, 2], [3, 0, 3, 1, 2, 2, -1, 0, 1, 1, 4, 2]),
             helper.make_tensor("src", TensorProto.FLOAT, [2, 3, 2],
                                [0.5, -1, 2, 3, -4, 5, 6, 7, -8, 9, 10, 11]),
             ints("rows", [2, 1], [1, 0]), ints("cells", [2, 2], [1, 2, 0, -1]),
             helper.make_tensor("row_vals", TensorProto.FLOAT, [2, 3, 5], list(range(30))),
             helper.make_tensor("cell_vals", TensorProto.FLOAT, [2, 5], list(range(10)))]
    nodes = [helper.make_node("ScatterElements", ["x", "cols", "src"], ["set"], axis=2)]
    nodes += [helper.make_node("ScatterElements", ["x", "cols", "src"], [reduction], axis=2,
                               reduction=reduction) for reduction in ("add", "mul", "max", "min")]
    nodes += [helper.make_node("ScatterND", ["x", "rows", "row_vals"], ["put_rows"]),
              helper.make_node("ScatterND", ["x", "cells", "cell_vals"], ["put_cells"]),
              helper.make_node("ScatterND", ["x", "cells", "cell_vals"], ["add_cells"],
                               reduction="add")]
    outs = [helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None) for n in nodes]
    path, built, lib = onnx_built(tmp_path, build_spec, "scatters_onnx", nodes, [2, 3, 5], outs,
                                  inits, dims=())
    feed = {"x": np.random.default_rng(6).standard_normal((2, 3, 5)).astype(np.float32)}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)
    for got in (run_reference(built, feed), lib.run(feed)):
        for out, expected, node in zip(built.outputs, want, nodes):
            np.testing.assert_allclose(got[out], expected, rtol=1e-6, atol=1e-6,
                                       err_msg=f"{node.op_type} {node.output[0]}")


def test_embedding_bags_of_one_size_match_pytorch(tmp_path, build_spec):
    case = "tests.importers.families:bags"
    spec, _, graph = import_case((case, ["ids:batch,5:int64", "weights:batch,5"],
                                  ["batch=1:4:2"], None), tmp_path, "bags")
    model, _, _ = build_spec(spec, name="bags")
    rng = np.random.default_rng(8)
    ids = rng.integers(0, 20, (3, 5)).astype(np.int64)
    ids[0], ids[1, 1] = 3, 3  # a bag of padding only (mean: zeros), one padded entry
    inputs = {"ids": ids, "weights": rng.standard_normal((3, 5)).astype(np.float32)}
    want = torch_outputs(case, inputs)
    for got in (run_reference(graph, inputs), model.run(inputs)):
        for out, expected in zip(graph.outputs, want):
            assert rel_error(got[out], expected) < 2e-6, (out, rel_error(got[out], expected))


class RaggedBags(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(10, 4)

    def forward(self, ids, offsets):
        return self.bag(ids, offsets)


def ragged_bags():
    return RaggedBags()


def test_bags_of_run_time_sizes_are_a_clear_error(tmp_path):
    with pytest.raises(AitError, match="offsets given at run time"):
        import_case(("tests.importers.test_scatter:ragged_bags",
                     ["ids:12:int64", "offsets:3:int64"], [], None), tmp_path, "ragged")


def test_sizes_only_the_run_knows_match_pytorch(tmp_path, build_spec):
    """Sums over symbolic counts (the count a run-time size), aranges over batch*seq, logical
    ops of int64 masks, a slice from -seq, torch.empty written by copies, histc."""
    case = "tests.importers.families:run_time_counts"
    spec, _, graph = import_case((case, ["x:batch,seq,4", "mask:batch,seq:int64"],
                                  ["batch=1:4:2", "seq=2:16:8"], None), tmp_path, "counts")
    model, _, _ = build_spec(spec, name="counts")
    for batch, seq in ((1, 3), (3, 7)):
        rng = np.random.default_rng(batch)
        inputs = {"x": rng.standard_normal((batch, seq, 4)).astype(np.float32),
                  "mask": rng.integers(0, 3, (batch, seq)).astype(np.int64)}
        want = torch_outputs(case, inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            for out, expected in zip(graph.outputs, want):
                assert rel_error(got[out], expected) < 2e-6, (out, rel_error(got[out], expected))


def test_grouped_experts_match_pytorch(tmp_path, build_spec):
    """transformers.grouped_mm_fallback: each row times its expert's weight (one grouped_matmul,
    not every row by every expert)."""
    pytest.importorskip("transformers")
    case = "tests.importers.families:grouped_experts"
    spec, _, graph = import_case((case, ["x:9,16"], [], None), tmp_path, "experts")
    assert [n.op for n in graph.nodes if n.op.endswith("matmul")] == ["grouped_matmul"]
    model, _, _ = build_spec(spec, name="experts")
    inputs = {"x": np.random.default_rng(2).standard_normal((9, 16)).astype(np.float32)}
    (want,) = torch_outputs(case, inputs)
    for got in (run_reference(graph, inputs), model.run(inputs)):
        assert rel_error(got[graph.outputs[0]], want) < 2e-6, rel_error(got[graph.outputs[0]], want)


class MaskedUpdates(torch.nn.Module):
    """x[mask] read, changed elementwise and written back with the same mask."""

    def forward(self, x, y):
        a = x.clone()
        a[x > 0.5] += 1.0
        b = y.clone()
        mask = y < 0
        b[mask] = x[mask] * 2 - y[mask]
        return a, b


def masked_updates():
    return MaskedUpdates()


class MaskedSum(torch.nn.Module):
    def forward(self, x):
        return x[x > 0].sum() + x


def masked_sum():
    return MaskedSum()


def test_masked_reads_written_back_with_their_mask_match_pytorch(tmp_path):
    """x[mask] += v and y[mask] = f(x[mask], y[mask]): the reads kept whole, the write picks
    the selected elements; a masked read that ends anywhere else still stops in one line."""
    case = "tests.importers.test_scatter:masked_updates"
    _, _, graph = import_case((case, ["x:batch,6", "y:batch,6"], ["batch=1:4:2"], None),
                              tmp_path, "masked")
    rng = np.random.default_rng(4)
    inputs = {"x": rng.standard_normal((3, 6)).astype(np.float32),
              "y": rng.standard_normal((3, 6)).astype(np.float32)}
    got = run_reference(graph, inputs)
    for out, expected in zip(graph.outputs, torch_outputs(case, inputs)):
        np.testing.assert_allclose(got[out], expected, rtol=1e-6, atol=1e-6, err_msg=out)
    with pytest.raises(AitError, match="bool mask"):
        import_case(("tests.importers.test_scatter:masked_sum", ["x:batch,6"], ["batch=1:4:2"],
                     None), tmp_path, "masked_sum")
