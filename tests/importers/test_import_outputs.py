"""Where `ait-build import` writes (files/output.py): the spec and the weights beside it, never over
a folder, the ONNX file itself or a checkpoint the spec does not name, each with the umask's mode
(both used to be 0600, unreadable to a CI account); a re-import replaces its own two files."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from ait_build.cli.main import main  # noqa: E402


@pytest.fixture
def model_file(tmp_path) -> str:
    from onnx import TensorProto, helper, numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    path = str(tmp_path / "model.onnx")
    onnx.save(helper.make_model(graph), path)
    return path


def _import(model: str, out: str, capsys) -> tuple:
    capsys.readouterr()
    rc = main(["import", "onnx", model, "-o", out])
    return rc, capsys.readouterr().err


def test_files_get_the_umasks_mode_and_a_reimport_replaces_them(model_file, tmp_path, capsys):
    spec = tmp_path / "specs" / "m.yaml"
    old = os.umask(0o027)
    try:
        rc, err = _import(model_file, str(spec), capsys)
    finally:
        os.umask(old)
    assert rc == 0, err
    weights = tmp_path / "specs" / "m.safetensors"
    assert [stat.S_IMODE(p.stat().st_mode) for p in (spec, weights)] == [0o640, 0o640]
    os.chmod(spec, 0o600)
    assert _import(model_file, str(spec), capsys)[0] == 0
    assert stat.S_IMODE(spec.stat().st_mode) == 0o600  # a replaced file keeps its mode
    assert sorted(os.listdir(spec.parent)) == ["m.safetensors", "m.yaml"]


@pytest.mark.parametrize("out, setup, words", [
    ("folder.yaml", "folder", "folder.yaml: is a directory; give a file name"),
    ("m.yaml", "checkpoint", "m.safetensors exists and is not the weights file of"),
    ("m.yaml", "not a spec", "m.yaml exists and is not a model spec"),
    ("m.onnx", "", "give the spec file to write (.yaml)"),
    ("model.yaml", "the input", "is the input"),
    ("m.yaml", "fifo", "not a regular file (a FIFO)"),
])
def test_outputs_that_would_destroy_a_file_are_refused(model_file, tmp_path, capsys, out, setup,
                                                       words):
    """Refused before the import, and the file that was there is as it was."""
    path = tmp_path / out
    if setup == "folder":
        path.mkdir()
    elif setup == "checkpoint":
        (tmp_path / "m.safetensors").write_bytes(b"the user's weights")
    elif setup == "not a spec":
        path.write_text("my notes\n")
    elif setup == "the input":
        os.symlink(model_file, path)
    elif setup == "fifo":
        os.mkfifo(tmp_path / "m.safetensors")
    before = {name: os.lstat(tmp_path / name) for name in os.listdir(tmp_path)}
    rc, err = _import(model_file, str(path), capsys)
    assert rc == 1 and words in err and "Traceback" not in err, err
    after = {name: os.lstat(tmp_path / name) for name in os.listdir(tmp_path)}
    assert {k: (v.st_mode, v.st_size, v.st_mtime_ns) for k, v in after.items()} == \
           {k: (v.st_mode, v.st_size, v.st_mtime_ns) for k, v in before.items()}
