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

HERE = os.path.dirname(os.path.abspath(__file__))
HAVE = all(importlib.util.find_spec(p) for p in ("torch", "onnx", "onnxruntime"))
pytestmark = [pytest.mark.torch, pytest.mark.skipif(not HAVE, reason="needs torch, onnx and "
                                                    "onnxruntime")]


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kernels"))


@pytest.fixture
def project(tmp_path, monkeypatch, kernel_cache):
    """A project from `ait-build init` holding the user's model file, as the working folder;
    compiled kernels shared through a CacheDir, so a rebuild compiles only what changed."""
    folder = tmp_path / "project"
    assert main(["init", str(folder)]) == 0
    shutil.copy(os.path.join(HERE, "user_models.py"), folder / "user_models.py")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("AIT_BUILD_CACHE", kernel_cache)
    return folder


IMPORT = ["import", "torch", "user_models:tiny_cnn", "--args", '{"classes": 6}', "--input",
          "x:batch,3,16,16", "--dim", "batch=1:4:1", "-o", "specs/cnn.yaml"]


def bench(report, vs="torch,onnxruntime") -> dict:
    assert main(["bench", "cnn", "--batch", "1,2", "--vs", vs, "--runs", "3", "--warmup", "1",
                 "--json", str(report)]) == 0
    with open(report) as fh:
        return json.load(fh)


def test_bench_compares_an_imported_spec_with_its_source(project, tmp_path, capsys):
    assert main(IMPORT) == 0
    data = bench(tmp_path / "r.json")
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
    data = bench(tmp_path / "r.json")
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
