"""The ONNX package's own backend node tests (onnx.backend.test.case.node) run through the ONNX
importer and the reference executor: every case made only of operators the importer claims must
either match ONNX's expected outputs or be refused with a report line (an auto_pad, a 3-d pool,
an element type we lack), never give other numbers and never crash. Most of them match.
GatherND (negative indices, the arange grid of transformers' masks) and CumSum (whose backend
cases give the axis as a graph input, which we refuse) have cases of their own below."""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from ait_build.errors import AitError  # noqa: E402
from ait_build.importers.from_onnx import import_onnx  # noqa: E402
from ait_build.importers.options import parse_dim  # noqa: E402
from ait_build.importers.onnx_ops import HANDLERS  # noqa: E402
from ait_build.importers.simplify import simplify  # noqa: E402
from ait_build.importers.write import write_spec  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

MATCHED_AT_LEAST = 365  # of about 970 cases over the claimed operators (199 when written, 249
# with the operators of issue 32's model families, 341 with the activations, rounding,
# rearrangements and reductions written from our ops, 369 with the inverse trigonometric and
# hyperbolic functions, TopK, ReduceProd and the scatters)


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
                # a bfloat16 case's expected output is rounded to bfloat16's 8 bits, which the
                # reference (float32 arithmetic) does not do: half a unit in the last place
                rtol = max(case.rtol, 1e-5, 2.0 ** -8 if "bfloat16" in str(want.dtype) else 0)
                np.testing.assert_allclose(got[name], want, rtol=rtol,
                                           atol=max(case.atol, 1e-6), err_msg=case.name)
        else:
            matched.append(case.name)
        os.unlink(path)
    assert len(matched) >= MATCHED_AT_LEAST, (len(matched), sorted(refused))


def _import_model(model, tmp_path, name):
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(model, path)
    graph = import_onnx(path, [], [], name)
    simplify(graph)
    return write_spec(graph, str(tmp_path / f"{name}.yaml"), "test")[2]


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_gather_nd_with_negative_indices(tmp_path, depth):
    """Indices from the model's input, some negative: a gather of the data flattened over the
    indexed axes, as ONNX's reference evaluator computes it."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    node = helper.make_node("GatherND", ["data", "idx"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [3, 4, 5]),
                      helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3, depth])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rng = np.random.default_rng(depth)
    sizes = np.array([3, 4, 5][:depth])
    feed = {"data": rng.standard_normal((3, 4, 5)).astype(np.float32),
            "idx": rng.integers(-sizes, sizes, (2, 3, depth)).astype(np.int64)}
    want = ReferenceEvaluator(model).run(None, feed)[0]
    spec = _import_model(model, tmp_path, f"nd{depth}")
    np.testing.assert_array_equal(run_reference(spec, feed)[spec.outputs[0]], want)


def test_gather_nd_over_an_arange_grid_is_a_reshape(tmp_path):
    """mask[arange(b)[:, None, None, None], arange(s)[None, None, None, :]] as the dynamo
    exporter writes it (transformers' padding mask): Range, Unsqueeze, Expand, Concat,
    GatherND; the result is the mask reshaped to [b, 1, 1, s], no gather."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)  # noqa: E731
    scalar = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [], [v])  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["mask"], ["b"], start=0, end=1),
        helper.make_node("Shape", ["mask"], ["s"], start=1, end=2),
        helper.make_node("Squeeze", ["b"], ["b0"]), helper.make_node("Squeeze", ["s"], ["s0"]),
        helper.make_node("Range", ["zero", "b0", "one"], ["rb"]),
        helper.make_node("Range", ["zero", "s0", "one"], ["rs"]),
        helper.make_node("Unsqueeze", ["rb", "a123"], ["ib"]),  # [b, 1, 1, 1]
        helper.make_node("Unsqueeze", ["rs", "a012"], ["is"]),  # [1, 1, 1, s]
        helper.make_node("Max", ["ib", "is"], ["both"]),
        helper.make_node("Shape", ["both"], ["shape"]),
        helper.make_node("Expand", ["ib", "shape"], ["eb"]),
        helper.make_node("Expand", ["is", "shape"], ["es"]),
        helper.make_node("Unsqueeze", ["eb", "last"], ["cb"]),
        helper.make_node("Unsqueeze", ["es", "last"], ["cs"]),
        helper.make_node("Concat", ["cb", "cs"], ["idx"], axis=-1),
        helper.make_node("GatherND", ["mask", "idx"], ["y"])]
    inits = [scalar("zero", 0), scalar("one", 1), ints("a123", [1, 2, 3]),
             ints("a012", [0, 1, 2]), ints("last", [-1])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    spec = _import_model(model, tmp_path, "grid")
    assert sorted({n.op for n in spec.nodes}) == ["reshape"], [n.op for n in spec.nodes]
    feed = {"mask": np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)}
    want = ReferenceEvaluator(model).run(None, feed)[0]
    np.testing.assert_array_equal(run_reference(spec, feed)[spec.outputs[0]], want)


@pytest.mark.parametrize("reverse,exclusive", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_over_a_symbolic_axis(tmp_path, build_spec, reverse, exclusive):
    """ONNX CumSum along a dim of up to 12 (four doubling steps), either way, inclusive or not,
    on int64 (exact) and float32, against ONNX's reference evaluator: the spec's reference and
    its cpu build."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    nodes = [helper.make_node("CumSum", [x, "axis"], [f"{x}_sum"], reverse=reverse,
                              exclusive=exclusive) for x in ("f", "i")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, "seq"]),
                     helper.make_tensor_value_info("i", TensorProto.INT64, [2, "seq"])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         (("f_sum", TensorProto.FLOAT), ("i_sum", TensorProto.INT64))],
        [helper.make_tensor("axis", TensorProto.INT64, [], [-1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = str(tmp_path / "cumsum.onnx")
    onnx.save(model, path)
    imported = import_onnx(path, [], [parse_dim("seq=1:12:8")], "cumsum")
    simplify(imported)
    path, _, spec = write_spec(imported, str(tmp_path / "cumsum.yaml"), "test")
    built, _, _ = build_spec(path, name="cumsum")
    rng = np.random.default_rng(reverse * 2 + exclusive)
    for seq in (1, 7, 12):
        feed = {"f": rng.standard_normal((2, seq)).astype(np.float32),
                "i": rng.integers(-1000, 1000, (2, seq))}
        want = ReferenceEvaluator(model).run(None, feed)
        for got in (run_reference(spec, feed), built.run(feed)):
            np.testing.assert_allclose(got[spec.outputs[0]], want[0], rtol=1e-6, atol=1e-5)
            np.testing.assert_array_equal(got[spec.outputs[1]], want[1])
