"""Forms of the ONNX files PyTorch's TorchScript exporter writes that the ONNX sweep
(bench/results/cpu/onnx_sweep/) found the importer getting wrong, each in a small graph built
with onnx.helper, imported with symbolic dims and its reference compared with ONNX Runtime at
two sizes: transformers' padding mask as TorchScript writes it (a flattened mask gathered at
`arange(batch) * seq + arange(seq)`), and `Flatten` at axis == rank."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ait_build.importers.from_onnx import import_onnx  # noqa: E402
from ait_build.importers.options import parse_dim  # noqa: E402
from ait_build.importers.simplify import simplify  # noqa: E402
from ait_build.importers.write import write_spec  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)


def _ints(**arrays) -> list:
    return [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in arrays.items()]


def _compare(tmp_path, nodes, inits, shapes) -> None:
    path = str(tmp_path / "m.onnx")
    graph = helper.make_graph(nodes, "g", [X], [Y], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    imported = import_onnx(path, [], [parse_dim("batch=1:8:2"), parse_dim("seq=1:16:4")], "m")
    simplify(imported)
    _, _, spec = write_spec(imported, str(tmp_path / "m.yaml"), "test")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for shape in shapes:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        (want,) = session.run(None, {"x": x})
        (got,) = (run_reference(spec, {"x": x})[o] for o in spec.outputs)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_flattened_mask_gathered_at_arange_times_a_size(tmp_path):
    """mask[batch_idx, seq_idx] as TorchScript's exporter writes transformers' vmap'd mask:
    Flatten(mask, axis=2) is [batch*seq, 1], indexed at arange(batch)[:, None] * seq +
    arange(seq), the size `seq` a scalar read from a Shape beside run-time aranges."""
    cast = lambda src, dst: helper.make_node("Cast", [src], [dst], to=TensorProto.INT64)
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["b"], axis=0),
             helper.make_node("Gather", ["shape", "one"], ["s"], axis=0),
             cast("b", "b64"), cast("s", "s64"),
             helper.make_node("Range", ["zero", "b64", "one"], ["rows"]),
             helper.make_node("Range", ["zero", "s64", "one"], ["cols"]),
             helper.make_node("Unsqueeze", ["rows", "one_axis"], ["rows2"]),
             helper.make_node("Mul", ["rows2", "s"], ["starts"]),
             helper.make_node("Add", ["starts", "cols"], ["index"]),
             helper.make_node("Flatten", ["x"], ["flat"], axis=2),
             helper.make_node("Gather", ["flat", "index"], ["picked"], axis=0),
             helper.make_node("Shape", ["index"], ["index_shape"]),
             helper.make_node("Reshape", ["picked", "index_shape"], ["y"])]
    _compare(tmp_path, nodes, _ints(zero=0, one=1, one_axis=[1]), [(2, 5), (3, 7)])


@pytest.mark.parametrize("axis", [2, -2, 1, 0])
def test_flatten_at_every_axis_from_minus_rank_to_rank(tmp_path, axis):
    nodes = [helper.make_node("Flatten", ["x"], ["f"], axis=axis),
             helper.make_node("Relu", ["f"], ["y"])]
    _compare(tmp_path, nodes, [], [(2, 5), (3, 4)])
