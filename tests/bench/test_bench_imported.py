"""`ait-build bench --vs torch,onnxruntime` on a spec a user imported in a new project: bench
rebuilds the model from the spec's `source:` field and compares; a spec without a source, or
edited after import, gets one line saying why not, and ours is still timed."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import numpy as np
import pytest

from ait_build.cli.main import main
from shared_cache import cache_folder

HERE = os.path.dirname(os.path.abspath(__file__))
HAVE = all(importlib.util.find_spec(p) for p in ("torch", "onnx", "onnxruntime"))
pytestmark = [pytest.mark.torch, pytest.mark.skipif(not HAVE, reason="needs torch, onnx and "
                                                    "onnxruntime")]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project from `ait-build init` holding the user's model file, as the working folder;
    compiled kernels shared through the run's CacheDir (shared_cache.py), so a rebuild compiles
    only what changed."""
    folder = tmp_path / "project"
    assert main(["init", str(folder)]) == 0
    shutil.copy(os.path.join(HERE, "user_models.py"), folder / "user_models.py")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("AIT_BUILD_CACHE", cache_folder("scons"))
    return folder


IMPORT = ["import", "torch", "user_models:tiny_cnn", "--args", '{"classes": 6}', "--input",
          "x:batch,3,16,16", "--dim", "batch=1:4:1", "-o", "specs/cnn.yaml"]


def bench(report, vs="torch,onnxruntime", batches="1") -> dict:
    """One bench of spec 'cnn' (each batch starts every side's process anew: one batch where a
    test asks what is compared, not how each batch compares)."""
    assert main(["bench", "cnn", "--batch", batches, "--vs", vs, "--runs", "3", "--warmup", "1",
                 "--json", str(report)]) == 0
    with open(report) as fh:
        return json.load(fh)


def test_bench_compares_an_imported_spec_with_its_source(project, tmp_path, capsys):
    assert main(IMPORT) == 0
    data = bench(tmp_path / "r.json", batches="1,2")
    assert [r["dims"] for r in data["results"]] == [{"batch": 1}, {"batch": 2}]
    for row in data["results"]:
        for side in ("torch", "onnxruntime"):
            assert row[side]["median_ms"] > 0 and row[side]["ratio"] > 0
            assert row[side]["max_abs_diff"] < 1e-4  # the same function: weights and layout
            assert row[side]["rel_l2"] < 1e-5
    table = capsys.readouterr().out
    assert "| batch=2 |" in table and "no comparison" not in table

    spec = project / "specs" / "cnn.yaml"
    imported = spec.read_text()
    assert "max_pool2d" in imported and "\nsource:\n" in imported
    # edited by hand: our side is timed, each comparison says why it is not made, in one line
    spec.write_text(imported.replace("op: max_pool2d", "op: avg_pool2d"))
    data = bench(tmp_path / "edited.json")
    why = ("no comparison: spec 'cnn' was edited after import (its graph differs from what "
           "`ait-build import` wrote); import it again to compare")
    for row in data["results"]:
        assert row["ait_build"]["median_ms"] > 0
        assert row["torch"]["skipped"] == why and row["onnxruntime"]["skipped"] == why
        assert "median_ms" not in row["torch"]
    table = capsys.readouterr().out.splitlines()
    assert table[-2:] == [f"torch: {why}", f"onnxruntime: {why}"]

    # formatting, comments and doc texts are no edit
    spec.write_text("# my model\n" + imported.replace("outputs: [fc]", "outputs:\n  - fc"))
    assert bench(tmp_path / "reformatted.json", "torch")["results"][0]["torch"]["max_abs_diff"] < 1e-4
    capsys.readouterr()

    # no source: a spec written by hand, or imported before sources were recorded
    from ait_build.importers.source import without_source
    spec.write_text(without_source(imported))
    data = bench(tmp_path / "plain.json", "torch")
    assert data["results"][0]["ait_build"]["median_ms"] > 0
    assert "has no `source:`" in data["results"][0]["torch"]["skipped"]
    assert capsys.readouterr().out.splitlines()[-1] == (
        "torch: no comparison: spec 'cnn' has no `source:` (it was not written by `ait-build "
        "import`) and no PyTorch twin in ait_build/bench/models.py")


def test_bench_compares_an_onnx_import_with_onnxruntime_on_its_file(project, tmp_path, capsys):
    import torch
    import user_models
    model = user_models.tiny_cnn(classes=6)
    torch.onnx.export(model, (torch.randn(1, 3, 16, 16),), "cnn.onnx", input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}}, dynamo=False)
    assert main(["import", "onnx", "cnn.onnx", "--dim", "batch=1:4:1", "-o", "specs/cnn.yaml"]) == 0
    data = bench(tmp_path / "r.json", batches="1,2")
    for row in data["results"]:
        assert row["onnxruntime"]["max_abs_diff"] < 1e-4
        assert row["torch"]["skipped"].startswith("no comparison with PyTorch: spec 'cnn' was "
                                                  "imported from ONNX (../cnn.onnx)")
    # a new checkpoint in the spec's weights file: ONNX Runtime runs with it too
    from safetensors.numpy import load_file, save_file
    weights = load_file("specs/cnn.safetensors")
    save_file({k: (v * 1.5 if v.dtype.kind == "f" else v) for k, v in weights.items()},
              "specs/cnn.safetensors")
    capsys.readouterr()
    data = bench(tmp_path / "new_weights.json", "onnxruntime")
    assert data["results"][0]["onnxruntime"]["max_abs_diff"] < 1e-3
    assert capsys.readouterr().out.splitlines()[-1] == (
        "onnxruntime: the weights file is not the one the import wrote: the source model gets "
        "the spec's weights")
    # the file changed after import
    with open("cnn.onnx", "ab") as fh:
        fh.write(b"\0")
    assert bench(tmp_path / "changed.json", "onnxruntime")["results"][0]["onnxruntime"][
        "skipped"] == ("no comparison: ../cnn.onnx changed since spec 'cnn' was imported from it; "
                       "import it again to compare")


def test_a_source_that_cannot_be_rebuilt_here(project, tmp_path):
    assert main(IMPORT) == 0
    os.rename("user_models.py", "elsewhere.py")  # the sides run in processes of their own
    data = bench(tmp_path / "r.json", "torch")
    why = data["results"][0]["torch"]["skipped"]
    assert why.startswith("no comparison: cannot rebuild the source of spec 'cnn' "
                          "(user_models:tiny_cnn) here: cannot import module 'user_models'")
    assert "\n" not in why


def test_onnx_runtime_gets_weights_the_import_stored_with_unit_axes_changed(tmp_path):
    """A pointwise conv1d's [O, C, 1] weight the import stored as a GEMM's [O, C] (and, in
    SqueezeBERT's file, a scalar Gather index stored as [1]) goes back to the file's dims: ONNX
    Runtime refused the file with them as stored."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from ait_build.bench.source_twin import onnx_model
    from ait_build.spec.model import load_model
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 4, 1)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array(0, np.int64), "index")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Gather", ["c", "index"], ["y"], axis=2)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["batch", 4, "seq"])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    path, spec = str(tmp_path / "m.onnx"), str(tmp_path / "m.yaml")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert main(["import", "onnx", path, "--dim", "seq=1:8", "-o", spec]) == 0
    model, _ = onnx_model(spec, load_model(spec), "m")
    x = {"x": rng.standard_normal((2, 4, 5)).astype(np.float32)}
    got = ort.InferenceSession(model.SerializeToString()).run(None, x)[0]
    want = ort.InferenceSession(path).run(None, x)[0]
    np.testing.assert_array_equal(got, want)


def test_a_file_onnx_runtime_refuses_is_one_line_not_a_traceback(monkeypatch):
    """ONNX Runtime's own checks (a Gemm fed rank 3) skip the comparison with the reason."""
    import types

    from onnx import TensorProto, helper

    from ait_build.bench import competitors
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    nodes = [helper.make_node("Gemm", ["x", "x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    monkeypatch.setattr(competitors, "onnx_model", lambda *args: (model, ""))
    ctx = types.SimpleNamespace(spec="m.yaml", graph=None, twin_name="m")
    why = competitors.prepare_onnxruntime(ctx, {})["skipped"]
    assert why.startswith("no comparison: ONNX Runtime refuses the source file with the spec's "
                          "weights: [ONNXRuntimeError]") and "\n" not in why, why
