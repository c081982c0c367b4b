"""A build stopped by a signal stops whole: `ait-build build` passes a SIGTERM on to the SCons it
started, waits for it and ends by that signal; the next build completes it
(ait_build/build/invoke.py run_scons)."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys

from buildproj import ONE_OP, REPO


def _children(pid: int) -> list:
    pids = []
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        with open(path) as fh:
            pids += [int(p) for p in fh.read().split()]
    return pids


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_sigterm_to_ait_build_build_stops_scons_and_the_next_build_goes_on(tmp_path):
    """A CI job's timeout or `kill` used to end `ait-build build` at once and leave SCons
    building on its own, into the folder the next build writes."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "one.yaml").write_text(ONE_OP.format(name="one"))
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("AIT_BUILD_CACHE", None)
    cmd = [sys.executable, "-m", "ait_build", "build", "specs/one.yaml", "--target", "cpu",
           "--cache", "off"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if "] compiling " in line:
            break
    scons = _children(proc.pid)
    assert scons
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=600)  # not communicate(): SCons holds the same stdout
    outlived = [pid for pid in scons if _running(pid)]
    for pid in outlived:
        os.kill(pid, signal.SIGKILL)
    assert not outlived, "SCons outlived ait-build build"
    assert proc.returncode == -signal.SIGTERM
    assert "interrupted (SIGTERM)" in proc.stderr.read()
    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    from ait_build.runtime import Model
    import numpy as np
    with Model(str(tmp_path / "build" / "cpu" / "one")) as model:
        x = np.arange(-8, 8, dtype=np.float32).reshape(2, 8)
        assert (model.run({"x": x})["act"] == np.maximum(x, 0)).all()
