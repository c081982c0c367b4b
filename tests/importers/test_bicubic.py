"""Bicubic resizes imported from PyTorch and from the file torch.onnx.export writes (ONNX Resize,
mode cubic), built for cpu and matched against PyTorch: CrossViT's input resize (240 -> 224,
align_corners=False) shrunk, an upsampling by scale_factor with align_corners, and a resize to a
size of other proportions; the ONNX package's own cubic Resize cases and its reference
evaluator with another A; antialiased resizes are refused in one line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from test_families import check_family, import_family  # noqa: E402

from ait_build.errors import AitError  # noqa: E402

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

pytestmark = pytest.mark.torch


class _Bicubic(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):                                                    # [b, 3, 12, 12]
        a = F.interpolate(x, size=(10, 10), mode="bicubic", align_corners=False)
        b = F.interpolate(self.conv(a), scale_factor=2, mode="bicubic", align_corners=True)
        c = F.interpolate(x, size=(5, 17), mode="bicubic")
        return a, b, c


class _Antialiased(nn.Module):
    def forward(self, x):
        return F.interpolate(x, size=(6, 6), mode="bicubic", antialias=True)


def bicubic():
    torch.manual_seed(24)
    return _Bicubic().eval()


def antialiased():
    return _Antialiased().eval()


CASE = ("tests.importers.test_bicubic:bicubic", ["x:batch,3,12,12"], ["batch=1:2:1"],
        {"x": np.random.default_rng(24).standard_normal((1, 3, 12, 12)).astype(np.float32)})


@pytest.mark.parametrize("source", ["torch", "onnx"])
def test_bicubic_matches_torch_on_cpu(source, tmp_path, build_spec):
    check_family(CASE, source, tmp_path, build_spec, f"bicubic_{source}")


def test_antialiased_resize_is_refused_in_one_line(tmp_path):
    case = ("tests.importers.test_bicubic:antialiased",) + CASE[1:]
    with pytest.raises(AitError) as info:
        import_family(case, "torch", tmp_path, "aa")
    assert "antialias=True is not supported" in str(info.value), str(info.value)


ONNX_CASES = ["test_resize_upsample_scales_cubic", "test_resize_upsample_scales_cubic_align_corners",
              "test_resize_upsample_scales_cubic_asymmetric", "test_resize_upsample_sizes_cubic",
              "test_resize_downsample_sizes_cubic"]


@pytest.mark.parametrize("name", ONNX_CASES)
def test_onnx_backend_cubic_cases_match(tmp_path, name):
    """The ONNX package's own cubic Resize cases (A = -0.75, exclude_outside 0), their scales or
    sizes made initializers (the cases feed them as inputs), against ONNX's expected outputs;
    test_onnx_node_cases.py runs them as they are (refused: sizes from tensor values)."""
    import onnx
    from onnx import numpy_helper
    from onnx.backend.test.case import node
    with warnings.catch_warnings():  # the other cases' data warn as they are made
        warnings.simplefilter("ignore")
        (case,) = [c for c in node.collect_testcases(None) if c.name == name]
    (inputs, outputs), = case.data_sets[:1]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    for value, array in zip(list(graph.input), inputs):
        if value.name != "X":
            graph.input.remove(value)
            graph.initializer.append(numpy_helper.from_array(np.asarray(array), value.name))
    got = _import_and_run(model, tmp_path, {"X": np.asarray(inputs[0])})
    np.testing.assert_allclose(got, outputs[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coordinates", ["half_pixel", "align_corners"])
def test_onnx_cubic_coeff_a_matches_onnx_reference(tmp_path, coordinates):
    """cubic_coeff_a = -0.5 (TensorFlow's A) reaches the op: against onnx.reference's Resize."""
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    sizes = numpy_helper.from_array(np.array([1, 2, 7, 3], np.int64), "sizes")
    resize = helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"], mode="cubic",
                              cubic_coeff_a=-0.5, coordinate_transformation_mode=coordinates)
    graph = helper.make_graph([resize], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 4, 5])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              [sizes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    x = np.random.default_rng(5).standard_normal((1, 2, 4, 5)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"X": x})[0]
    np.testing.assert_allclose(_import_and_run(model, tmp_path, {"X": x}), want, rtol=1e-5,
                               atol=1e-5)


def _import_and_run(model, tmp_path, feed):
    import onnx

    from ait_build.importers.from_onnx import import_onnx
    from ait_build.importers.simplify import simplify
    from ait_build.importers.write import write_spec
    from ait_build.ops.reference import run_reference
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    imported = import_onnx(path, [], [], "m")
    simplify(imported)
    _, _, spec = write_spec(imported, str(tmp_path / "m.yaml"), "test")
    return run_reference(spec, feed)[spec.outputs[0]]
