"""Python's // and %, C's fmod and torch.div's rounding modes (ids hashed into buckets, positions
halved) import as floor_divide and remainder (importers/lower.py `divide`, `remainder`), from
PyTorch and from ONNX (Mod, Div of ints), and the cpu build computes what the source does."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
CASE = "tests.importers.families:integer_division"


def feed(batch: int) -> dict:
    rng = np.random.default_rng(batch)
    return {"ids": rng.integers(-60, 60, (batch, 9)).astype(np.int64),
            "x": (rng.standard_normal((batch, 9)) * 3).astype(np.float32)}


def test_integer_division_imports_and_builds(tmp_path, build_spec):
    spec, _, graph = import_case((CASE, ["ids:batch,9:int64", "x:batch,9"], ["batch=1:4:2"],
                                  None), tmp_path, "integer_division")
    ops = {n.op for n in graph.nodes}
    assert {"floor_divide", "remainder"} <= ops, ops
    model, _, _ = build_spec(spec, name="integer_division")
    for batch in (1, 3):
        inputs = feed(batch)
        want = torch_outputs(CASE, inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            ids, x = (got[o] for o in graph.outputs)
            np.testing.assert_array_equal(ids, want[0])
            np.testing.assert_allclose(x, want[1], rtol=1e-5, atol=1e-5)


def test_onnx_mod_and_integer_div(tmp_path, build_spec):
    """ONNX Mod (fmod 0: Python's, ints; fmod 1: C's) and Div of ints (toward zero, as ONNX
    Runtime computes it)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from ait_build.importers.from_onnx import import_onnx
    from ait_build.importers.options import parse_dim
    from ait_build.importers.simplify import simplify
    from ait_build.importers.write import write_spec

    three = helper.make_tensor("three", TensorProto.INT64, [1], [-3])
    nodes = [helper.make_node("Mod", ["ids", "three"], ["py_mod"], fmod=0),
             helper.make_node("Mod", ["ids", "three"], ["c_mod"], fmod=1),
             helper.make_node("Div", ["ids", "three"], ["quot"]),
             helper.make_node("Mod", ["x", "x_div"], ["x_mod"], fmod=1)]
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 6])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])
    x_div = helper.make_tensor_value_info("x_div", TensorProto.FLOAT, ["batch", 6])
    outs = [helper.make_tensor_value_info(o, TensorProto.INT64, ["batch", 6])
            for o in ("py_mod", "c_mod", "quot")]
    outs.append(helper.make_tensor_value_info("x_mod", TensorProto.FLOAT, ["batch", 6]))
    model = helper.make_model(helper.make_graph(nodes, "mods", [ids, x, x_div], outs, [three]),
                              opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "mods.onnx"
    onnx.save(model, str(path))
    graph = import_onnx(str(path), [], [parse_dim("batch=1:4:2")], "mods")
    simplify(graph)
    spec, _, built = write_spec(graph, str(tmp_path / "mods.yaml"), "test import")
    lib, _, _ = build_spec(spec, name="mods")
    rng = np.random.default_rng(5)
    inputs = {"ids": rng.integers(-20, 20, (2, 6)).astype(np.int64),
              "x": rng.standard_normal((2, 6)).astype(np.float32) * 4,
              "x_div": rng.choice([-1.5, 0.7, 2.0], (2, 6)).astype(np.float32)}
    want = {"py_mod": np.remainder(inputs["ids"], -3), "c_mod": np.fmod(inputs["ids"], -3),
            "quot": np.trunc(inputs["ids"] / -3).astype(np.int64),
            "x_mod": np.fmod(inputs["x"], inputs["x_div"])}
    for got in (run_reference(built, inputs), lib.run(inputs)):
        for out, (name, expected) in zip(built.outputs, want.items()):  # in the file's order
            np.testing.assert_allclose(got[out], expected, rtol=1e-6, atol=1e-6, err_msg=name)
