"""What commands write, and where (files/output.py, docs/security.md): an output that is a FIFO or
a device is written in place, never replaced by a regular file; a new output has the umask's
mode; a folder, an unwritable place or the command's own input is refused before the work; init
and `targets --copy` never write through a link or out of the project."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
import time

import pytest

from cli_in_process import run_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "specs", "mlp.yaml")


def _cli(*args, cwd=ROOT, timeout=120):
    """A process of its own: for a command writing to a FIFO (which must not hang the test) or
    under a umask of the test's choosing."""
    return subprocess.run([sys.executable, "-m", "ait_build", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=ROOT))


def _error(proc, words: str) -> None:
    """One line on stderr, exit status 1: the user's error, not an internal one."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


def _drain(fifo: str, got: list) -> threading.Thread:
    def read():
        with open(fifo, "rb") as fh:
            got.append(fh.read())
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


@pytest.mark.parametrize("flag", ["-o", "--intermediates"])
def test_an_output_that_is_a_fifo_is_written_in_place(tmp_path, flag):
    """As `-o /dev/null` is: safetensors' own writer replaced the path with a regular file (as
    root, /dev/null became one for the whole machine)."""
    from safetensors.numpy import load
    fifo = str(tmp_path / "out.safetensors")
    os.mkfifo(fifo)
    got = []
    reader = _drain(fifo, got)
    proc = _cli("reference", MLP, "--random-input", "--batch", "2", flag, fifo)
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert "softmax" in load(got[0])


def test_a_new_output_has_the_umasks_mode(tmp_path):
    """safetensors' writer made every file 0600, unreadable to a CI account."""
    out = tmp_path / "out.safetensors"
    old = os.umask(0o022)
    try:
        proc = _cli("reference", MLP, "--random-input", "-o", str(out))
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


@pytest.mark.parametrize("args, words", [
    (["profile", "mlp", "--target", "h200", "-o", "{tmp}"], "{tmp}: is a directory"),
    (["bench", "mlp", "--json", "{tmp}"], "{tmp}: is a directory"),
    (["bench", "mlp", "--json", "/proc/ait-build/bench.json"], "cannot write /proc/ait-build/"),
    (["graph", MLP, "-o", MLP], f"is the input {MLP}"),
    (["reference", MLP, "--random-input", "-o", MLP], "writing it would destroy it"),
    (["reference", MLP, "--random-input", "-o", "{tmp}/o.st", "--intermediates", "{tmp}/./o.st"],
     "-o and --intermediates name the same file"),  # the second replaced the first
])
def test_outputs_are_checked_before_the_work(tmp_path, args, words):
    """`profile -o FOLDER` was an internal error, `bench --json` failed after the whole bench."""
    start = time.monotonic()
    proc = run_main(*[a.format(tmp=tmp_path) for a in args], cwd=ROOT)
    _error(proc, words.format(tmp=tmp_path))
    assert not proc.stdout and time.monotonic() - start < 60


def test_init_refuses_links_that_lead_out_of_the_project(tmp_path):
    """A cloned repository can plant dangling links where init writes: init followed them and
    created files outside the project. Now it writes nothing."""
    outside = tmp_path / "outside"
    for rel, target in [(".gitignore", outside / "gitignore"),
                        (os.path.join("specs", "mlp.yaml"), outside / "evil.yaml")]:
        project = tmp_path / f"p{len(rel)}"
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, project / rel)
        _error(run_main("init", str(project)), "is a link to")
        assert not outside.exists()
        assert sorted(os.listdir(project)) == [rel.split(os.sep)[0]]
    project = tmp_path / "folder_link"
    project.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", project / "targets")  # a folder that leads out
    _error(run_main("init", str(project)), "leads outside the project")
    assert not os.listdir(tmp_path / "elsewhere")
    assert os.listdir(project) == ["targets"]  # none of INIT_FILES was written


def test_targets_show_takes_a_path_and_copy_needs_a_folder(tmp_path):
    proc = run_main("targets", "--show", os.path.join("targets", "h200.yaml"), cwd=ROOT)
    assert proc.returncode == 0 and "name: h200" in proc.stdout, proc.stderr
    assert run_main("init", str(tmp_path / "p")).returncode == 0
    shutil.rmtree(tmp_path / "p" / "targets")
    (tmp_path / "p" / "targets").write_text("")
    _error(run_main("targets", "--copy", "h200", cwd=str(tmp_path / "p")), "targets is not a folder")
    os.remove(tmp_path / "p" / "targets")
    os.symlink(tmp_path / "gone", tmp_path / "p" / "targets")
    _error(run_main("targets", "--copy", "h200", cwd=str(tmp_path / "p")), "which does not exist")
    assert not (tmp_path / "gone").exists()
