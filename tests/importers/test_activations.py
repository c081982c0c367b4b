"""Activations, rounding, statistics and masks that both importers build from our ops
(importers/activations.py): from PyTorch (torch_math.py) against PyTorch, and from ONNX
(onnx_math.py) against ONNX Runtime, each through the reference and a cpu build."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
CASE = "tests.importers.families:activations"


def test_torch_activations_match_pytorch(tmp_path, build_spec):
    spec, _, graph = import_case((CASE, ["x:batch,8,6,4"], ["batch=1:4:2"], None), tmp_path,
                                 "activations")
    model, _, _ = build_spec(spec, name="activations")
    for batch in (1, 3):
        inputs = {"x": (np.random.default_rng(batch).standard_normal((batch, 8, 6, 4)) * 2)
                  .astype(np.float32)}
        want = torch_outputs(CASE, inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            for out, expected in zip(graph.outputs, want):
                assert rel_error(got[out], expected) < 2e-6, (out, rel_error(got[out], expected))


def onnx_built(tmp_path, build_spec, name: str, nodes, x_shape: list, outputs, initializers,
               dims=("batch=1:4:2",)):
    """(path, graph, cpu library) of an opset-18 ONNX file of `nodes` over one float input x."""
    import onnx
    from onnx import TensorProto, helper

    from ait_build.importers.from_onnx import import_onnx
    from ait_build.importers.options import parse_dim
    from ait_build.importers.simplify import simplify
    from ait_build.importers.write import write_spec

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)
    model = helper.make_model(helper.make_graph(nodes, name, [x], outputs, initializers),
                              opset_imports=[helper.make_opsetid("", 18)])
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(model, path)
    graph = import_onnx(path, [], [parse_dim(d) for d in dims], name)
    simplify(graph)
    spec, _, built = write_spec(graph, str(tmp_path / f"{name}.yaml"), "test import")
    return path, built, build_spec(spec, name=name)[0]


def test_layer_norms_without_a_bias_and_integer_sums(tmp_path, build_spec):
    case = "tests.importers.families:norms_and_counts"
    spec, _, graph = import_case((case, ["x:batch,5,16", "mask:batch,5:int64"], ["batch=1:4:2"],
                                  None), tmp_path, "norms_and_counts")
    model, _, _ = build_spec(spec, name="norms_and_counts")
    rng = np.random.default_rng(12)
    inputs = {"x": rng.standard_normal((3, 5, 16)).astype(np.float32),
              "mask": rng.integers(0, 2, (3, 5)).astype(np.int64)}
    want = torch_outputs(case, inputs)
    for got in (run_reference(graph, inputs), model.run(inputs)):
        (y, counts) = (got[o] for o in graph.outputs)
        assert rel_error(y, want[0]) < 2e-6, rel_error(y, want[0])
        np.testing.assert_array_equal(counts, want[1])


def test_grid_sample_matches_pytorch_and_onnxruntime(tmp_path, build_spec):
    """F.grid_sample and ONNX GridSample (importers/sampling.py) at points inside and outside
    the image, through the reference and a cpu build."""
    case = "tests.importers.families:grid_samples"
    rng = np.random.default_rng(13)
    inputs = {"x": rng.standard_normal((2, 4, 6, 5)).astype(np.float32),
              "grid": (rng.uniform(-1.3, 1.3, (2, 3, 7, 2))).astype(np.float32)}
    spec, _, graph = import_case((case, ["x:batch,4,6,5", "grid:batch,3,7,2"], ["batch=1:4:2"],
                                  None), tmp_path, "grid_samples")
    model, _, _ = build_spec(spec, name="grid_samples")
    (want,) = torch_outputs(case, inputs)
    for got in (run_reference(graph, inputs), model.run(inputs)):
        assert rel_error(got[graph.outputs[0]], want) < 2e-6, rel_error(got[graph.outputs[0]], want)


def test_a_conv_added_to_its_own_input_builds_right(tmp_path, build_spec):
    """y + bn(depthwise(y)) on cpu: the conv's output planned over y (its residual and its data
    input) gave relative error 1.6 (plan_memory now keeps them apart)."""
    case = "tests.importers.families:depthwise_own_residual"
    spec, _, graph = import_case((case, ["x:batch,16,14,14"], ["batch=1:4:2"], None), tmp_path,
                                 "depthwise_own_residual")
    model, _, _ = build_spec(spec, name="depthwise_own_residual")
    inputs = {"x": np.random.default_rng(14).standard_normal((2, 16, 14, 14)).astype(np.float32)}
    (want,) = torch_outputs(case, inputs)
    got = model.run(inputs)[graph.outputs[0]]
    assert rel_error(got, want) < 2e-6, rel_error(got, want)


ONNX_NODES = [  # (op, attributes, extra inputs)
    ("LeakyRelu", {"alpha": 0.2}, []), ("Elu", {"alpha": 0.5}, []), ("Selu", {}, []),
    ("Celu", {"alpha": 1.5}, []), ("Softplus", {}, []), ("Softsign", {}, []), ("Mish", {}, []),
    ("ThresholdedRelu", {"alpha": 0.3}, []), ("Shrink", {"lambd": 0.4, "bias": 0.1}, []),
    ("LogSoftmax", {"axis": 1}, []), ("Floor", {}, []), ("Round", {}, []), ("Tan", {}, []),
    ("Atan", {}, []), ("PRelu", {}, ["slope"]), ("Trilu", {"upper": 0}, ["k"]),
    ("ReduceLogSumExp", {"keepdims": 0}, ["ax2"]), ("ReduceSumSquare", {"keepdims": 1}, ["ax12"]),
]


def test_onnx_activations_match_onnxruntime(tmp_path, build_spec):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper


    slope = helper.make_tensor("slope", TensorProto.FLOAT, [5], [0.1, 0.2, 0.3, 0.4, 0.5])
    k = helper.make_tensor("k", TensorProto.INT64, [], [1])
    axes = [helper.make_tensor("ax2", TensorProto.INT64, [1], [2]),
            helper.make_tensor("ax12", TensorProto.INT64, [2], [1, 2])]
    nodes, outputs = [], []
    for i, (op, attrs, extra) in enumerate(ONNX_NODES):
        if op in ("Tan",):
            nodes.append(helper.make_node("Mul", ["x", "tenth"], [f"x{i}"]))
            src = f"x{i}"
        else:
            src = "x"
        nodes.append(helper.make_node(op, [src] + extra, [f"y{i}"], **attrs))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    tenth = helper.make_tensor("tenth", TensorProto.FLOAT, [], [0.1])
    path, built, lib = onnx_built(tmp_path, build_spec, "acts", nodes, ["batch", 4, 5], outputs,
                                  [slope, k, tenth] + axes)
    feed = {"x": (np.random.default_rng(7).standard_normal((3, 4, 5)) * 2).astype(np.float32)}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)
    for got in (run_reference(built, feed), lib.run(feed)):
        for out, expected, (op, _, _) in zip(built.outputs, want, ONNX_NODES):
            assert rel_error(got[out], expected) < 2e-6, (op, rel_error(got[out], expected))


REARRANGE = "tests.importers.families:rearrangements"


def test_rearrangements_match_pytorch(tmp_path, build_spec):
    """Pixel and channel shuffles, rot90, Tensor.unfold, edge padding modes (torch_rearrange.py,
    Lower.pad_edges) against PyTorch through the reference and a cpu build."""
    spec, _, graph = import_case((REARRANGE, ["x:batch,8,6,4"], ["batch=1:4:2"], None), tmp_path,
                                 "rearrangements")
    model, _, _ = build_spec(spec, name="rearrangements")
    inputs = {"x": np.random.default_rng(9).standard_normal((2, 8, 6, 4)).astype(np.float32)}
    want = torch_outputs(REARRANGE, inputs)
    for got in (run_reference(graph, inputs), model.run(inputs)):
        for out, expected in zip(graph.outputs, want):
            np.testing.assert_allclose(got[out], expected, rtol=1e-6, atol=1e-6, err_msg=out)


def test_onnx_rearrangements_match_onnxruntime(tmp_path, build_spec):
    """DepthToSpace (both modes), SpaceToDepth, Pad's reflect, edge and wrap modes and 1-d
    MaxPool / AveragePool."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper


    pads = helper.make_tensor("pads", TensorProto.INT64, [8], [0, 0, 1, 2, 0, 0, 2, 1])
    nodes = [helper.make_node("DepthToSpace", ["x"], ["dcr"], blocksize=2, mode="DCR"),
             helper.make_node("DepthToSpace", ["x"], ["crd"], blocksize=2, mode="CRD"),
             helper.make_node("SpaceToDepth", ["dcr"], ["s2d"], blocksize=2)]
    nodes += [helper.make_node("Pad", ["x", "pads"], [mode], mode=mode)
              for mode in ("reflect", "edge", "wrap")]
    nodes += [helper.make_node("Reshape", ["x", "seq_shape"], ["seq"]),
              helper.make_node("MaxPool", ["seq"], ["max1d"], kernel_shape=[3], strides=[2],
                               pads=[1, 1]),
              helper.make_node("AveragePool", ["seq"], ["avg1d"], kernel_shape=[4], strides=[3],
                               pads=[2, 2], count_include_pad=1)]
    outs = [helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None) for n in nodes
            if n.op_type != "Reshape"]
    seq_shape = helper.make_tensor("seq_shape", TensorProto.INT64, [3], [0, 8, 24])
    path, built, lib = onnx_built(tmp_path, build_spec, "moves", nodes, ["batch", 8, 4, 6], outs,
                                  [pads, seq_shape])
    feed = {"x": np.random.default_rng(11).standard_normal((2, 8, 4, 6)).astype(np.float32)}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)
    for got in (run_reference(built, feed), lib.run(feed)):
        for out, expected, node in zip(built.outputs, want, [n for n in nodes
                                                             if n.op_type != "Reshape"]):
            np.testing.assert_allclose(got[out], expected, rtol=1e-6, atol=1e-6,
                                       err_msg=node.op_type)
