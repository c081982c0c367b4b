"""Model() loads only the files of one build (ait_build/runtime/identity.py): a changed weights
file, a truncated library and a manifest from another build are clear errors, never NaNs, a
SIGBUS or a heap overflow. Each case runs `ait-build run` in a subprocess, where a crash would
show as a signal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from buildproj import MODEL, copy_tree


def _run(build_dir: str, cwd: str):
    return subprocess.run([sys.executable, "-m", "ait_build", "run", build_dir, "--random-input"],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _one_line_error(proc, words: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 1: reported; negative: a signal
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


def _damage_weights(path: str) -> None:
    with open(path, "r+b") as fh:
        fh.seek(-5, os.SEEK_END)
        byte = fh.read(1)
        fh.seek(-5, os.SEEK_END)
        fh.write(bytes([byte[0] ^ 0x7f]))


def _truncate(path: str) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 2)


@pytest.mark.parametrize("damage, file, words", [
    (_damage_weights, "weights.safetensors", "does not match the SHA-256 in manifest.json"),
    (_truncate, f"lib{MODEL}.so", "does not match the hash its build recorded"),
    (os.remove, f"lib{MODEL}.so.sha256", "the build of libmlp.so did not finish"),
])
def test_damaged_build_folder_is_refused(built, tmp_path, damage, file, words):
    folder = str(tmp_path / "mlp")
    copy_tree(built.out(), folder)
    assert _run(folder, str(tmp_path)).returncode == 0
    damage(os.path.join(folder, file))
    _one_line_error(_run(folder, str(tmp_path)), words)


def test_manifest_of_another_build_is_refused(fresh, tmp_path):
    """A manifest with more inputs or larger dims than its library was built for would make the
    runtime pass buffers the library never expected."""
    old = str(tmp_path / "old")
    copy_tree(fresh.out(), old)
    fresh.edit(f"specs/{MODEL}.yaml", "max: 64", "max: 128")
    fresh.scons("target=cpu")
    for name in ("manifest.json", "weights.safetensors"):  # consistent with each other
        shutil.copy(os.path.join(old, name), fresh.out(name))
    _one_line_error(_run(fresh.out(), str(tmp_path)), "come from different builds")


def test_model_name_with_a_dash_builds_and_runs(built, tmp_path):
    """'-' is allowed in model names; the C functions are ait_my_model_* (manifest c_name). The
    kernels, which the name does not reach, may come from the run's cache."""
    project = built.copy(str(tmp_path / "proj"), shared_cache=True)
    with open(project.path("specs", f"{MODEL}.yaml"), encoding="utf-8") as fh:
        text = fh.read().replace(f"name: {MODEL}\n", "name: my-model\n", 1)
    with open(project.path("specs", "my-model.yaml"), "w", encoding="utf-8") as fh:
        fh.write(text)
    project.scons("model=my-model", "target=cpu")
    proc = subprocess.run([sys.executable, "-m", "ait_build", "run", "build/cpu/my-model",
                           "--random-input", "--check"], cwd=project.root, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=project.root))
    assert proc.returncode == 0, proc.stderr
    assert "check softmax:" in proc.stdout and proc.stdout.rstrip().endswith("ok")


def test_a_model_rebuilt_while_the_process_runs_loads_its_new_library(fresh):
    """dlopen() would hand back the library loaded before the rebuild (same path): the runtime
    loads the file as it is now, and the build_id check would catch a stale copy."""
    import numpy as np
    from ait_build.runtime import Model
    x = np.ones((2, 32), np.float32)
    with Model(fresh.out()) as before:
        assert before.run({"x": x})["softmax"].shape == (2, 16)
        fresh.edit(f"specs/{MODEL}.yaml", "out_features: 16", "out_features: 24")
        fresh.scons("target=cpu")
        with Model(fresh.out()) as after:  # while the old one is still loaded
            assert after.run({"x": x})["softmax"].shape == (2, 24)
        with Model(fresh.out()) as again:  # its path still names the old one for the loader
            assert again.run({"x": x})["softmax"].shape == (2, 24)


def test_check_after_a_spec_edit_says_the_build_is_older(fresh):
    """A spec changed after its build (the same inputs and outputs) fails `run --check` with a
    note that the build predates the spec; it said MISMATCH alone."""
    fresh.edit(f"specs/{MODEL}.yaml", "seed: 0", "seed: 1")
    proc = subprocess.run([sys.executable, "-m", "ait_build", "run", f"build/cpu/{MODEL}",
                           "--random-input", "--check"], cwd=fresh.root, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=fresh.root))
    assert proc.returncode == 1 and proc.stdout.rstrip().endswith("MISMATCH"), proc.stdout
    assert f"changed after {fresh.out()} was built" in proc.stderr and "build it again" in proc.stderr
