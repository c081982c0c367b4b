"""`ait-build run` on the toy library (the end-to-end runs with --check live in test_end_to_end)."""

from __future__ import annotations

import numpy as np

from ait_build.cli.main import main
from ait_build.ir.weights import save_safetensors
from toylib import toy_expected


def test_random_input_prints_a_summary_per_output(toy_dir, capsys):
    assert main(["run", toy_dir, "--random-input", "--batch", "3", "--dim", "seq=2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("y: float32[3, 4] mean=")
    assert out[1].startswith("count: float32[3] mean=")


def test_inputs_from_a_file_and_outputs_to_a_file(toy_dir, tmp_path, capsys):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    tokens = np.arange(6, dtype=np.int64)
    save_safetensors({"x": x, "tokens": tokens}, str(tmp_path / "in.safetensors"))
    assert main(["run", toy_dir, "--inputs", str(tmp_path / "in.safetensors"),
                 "-o", str(tmp_path / "out.safetensors")]) == 0
    from safetensors.numpy import load_file
    got = load_file(str(tmp_path / "out.safetensors"))
    np.testing.assert_array_equal(got["count"], toy_expected(x, tokens)["count"])


def test_errors_are_one_line_with_exit_status_1(toy_dir, tmp_path, capsys):
    assert main(["run", str(tmp_path), "--random-input"]) == 1
    assert "cannot read the manifest" in capsys.readouterr().err
    assert main(["run", toy_dir, "--random-input", "--dim", "sequence=3"]) == 1
    assert "unknown dim(s) sequence" in capsys.readouterr().err
    assert main(["run", toy_dir, "--random-input", "--check"]) == 1
    assert "--check needs the spec" in capsys.readouterr().err
