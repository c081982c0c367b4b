"""Inverse trigonometric and hyperbolic functions, atan2, heaviside, cdist and bucketize /
searchsorted (importers/activations.py, torch_trig.py, onnx_math.py): from PyTorch against
PyTorch and from ONNX against ONNX Runtime, each through the reference and one cpu build of a
model that holds them all."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_activations import onnx_built  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.errors import AitError  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
FACTORY = "tests.importers.test_trig_and_buckets:"
INPUTS = ["x:batch,8,6", "y:batch,8,6", "u:batch,8,6"]


class TrigAndBuckets(torch.nn.Module):
    """Every new op once; u, in (-1, 1), feeds asin, acos and atanh as it is (an input computed
    here, tanh(x), would differ from PyTorch's by an ulp, which acos near 1 magnifies; so would
    1 + x^2 for acosh, fused into one fma by the cpu build)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bounds", torch.tensor([-1.5, -0.5, 0.0, 0.0, 0.5, 2.0]))

    def forward(self, x, y, u):
        whole_y, whole_x = torch.floor(y), torch.floor(x)  # zeros on both axes, +0 only
        floats = (torch.asin(u), torch.acos(u), torch.atanh(u), torch.arcsin(u * 0.5),
                  torch.sinh(x * 4), torch.cosh(x * 4), torch.asinh(x * x * x),
                  torch.acosh(1 + x.abs()), torch.atan2(y, x), torch.atan2(whole_y, whole_x),
                  torch.heaviside(whole_x, y), torch.heaviside(whole_x, torch.tensor(0.25)),
                  torch.cdist(x, y[:, :5]), torch.cdist(x, y[:, :5], p=1.0),
                  torch.cdist(x, y[:, :5], p=float("inf")))
        counts = (torch.bucketize(x, self.bounds), torch.bucketize(whole_x, self.bounds,
                                                                   right=True, out_int32=True),
                  torch.searchsorted(self.bounds, whole_x), torch.searchsorted(
                      self.bounds, x, side="right"))
        return floats + counts


class CdistP3(torch.nn.Module):
    def forward(self, x, y):
        return torch.cdist(x, y, p=3.0)


def feed(batch: int) -> dict:
    rng = np.random.default_rng(batch)
    out = {name: (rng.standard_normal((batch, 8, 6)) * 2).astype(np.float32) for name in "xy"}
    out["u"] = rng.uniform(-0.999, 0.999, (batch, 8, 6)).astype(np.float32)
    return out


def torch_outputs(name: str, inputs: dict) -> list:
    with torch.no_grad():
        out = globals()[name]()(*(torch.from_numpy(v) for v in inputs.values()))
    return [t.numpy() for t in out]


def test_trig_and_buckets_match_pytorch(tmp_path, build_spec):
    """Each element within 1e-6 relative of PyTorch (the floats), equal (the counts)."""
    spec, _, graph = import_case((FACTORY + "TrigAndBuckets", INPUTS, ["batch=1:4:2"], None),
                                 tmp_path, "trig_and_buckets")
    model, _, _ = build_spec(spec, name="trig_and_buckets")
    for batch in (1, 3):
        inputs = feed(batch)
        want = torch_outputs("TrigAndBuckets", inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            for i, (out, expected) in enumerate(zip(graph.outputs, want)):
                assert got[out].dtype == expected.dtype, (i, got[out].dtype, expected.dtype)
                np.testing.assert_allclose(got[out], expected, rtol=1e-6, atol=1e-30,
                                           err_msg=f"output {i}")


def test_cdist_refuses_other_orders(tmp_path):
    with pytest.raises(AitError, match="p = 3.0"):
        import_case((FACTORY + "CdistP3", ["x:batch,8,6", "y:batch,5,6"], ["batch=1:4:2"],
                     None), tmp_path, "cdist_p3")


ONNX_NODES = ["Asin", "Acos", "Atanh", "Sinh", "Cosh", "Asinh", "Acosh"]


def test_onnx_inverse_and_hyperbolic_match_onnxruntime(tmp_path, build_spec):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    # x in (-1, 1) for asin, acos, atanh; 8x for sinh, cosh, asinh; 1 + |8x| for acosh (not
    # 1 + x^2: the cpu build may fuse it into one fma, which ONNX Runtime rounds twice)
    domain = {"Asin": "x", "Acos": "x", "Atanh": "x", "Acosh": "above_one"}
    nodes = [helper.make_node("Mul", ["x", "eight"], ["big"]),
             helper.make_node("Abs", ["big"], ["size"]),
             helper.make_node("Add", ["size", "one"], ["above_one"])]
    nodes += [helper.make_node(op, [domain.get(op, "big")], [op.lower()]) for op in ONNX_NODES]
    outputs = [helper.make_tensor_value_info(op.lower(), TensorProto.FLOAT, None)
               for op in ONNX_NODES]
    constants = [helper.make_tensor("eight", TensorProto.FLOAT, [], [8.0]),
                 helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    path, built, lib = onnx_built(tmp_path, build_spec, "inverse_hyperbolic", nodes,
                                  ["batch", 4, 5], outputs, constants)
    inputs = {"x": np.random.default_rng(7).uniform(-0.999, 0.999, (3, 4, 5)).astype(np.float32)}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)
    for got in (run_reference(built, inputs), lib.run(inputs)):
        for out, expected, op in zip(built.outputs, want, ONNX_NODES):
            np.testing.assert_allclose(got[out], expected, rtol=1e-6, atol=1e-30, err_msg=op)
