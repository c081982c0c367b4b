"""A bench side whose process dies of a signal (a crash in the library: a truncated BLAS gives
SIGBUS) is reported with the signal's name, since the dying process says nothing itself."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from ait_build.bench.sides import SideProcess
from ait_build.errors import AitError


def test_a_side_killed_by_a_signal_names_it(tmp_path):
    side = object.__new__(SideProcess)  # its process, without loading a model
    side.side = "ait_build"
    side.log = open(tmp_path / "side.stderr", "w+", encoding="utf-8")
    side.proc = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.kill(os.getpid(), {int(signal.SIGBUS)})"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=side.log, text=True)
    side.proc.wait()
    with pytest.raises(AitError, match=r"bench side 'ait_build' failed:\n\(killed by SIGBUS\)"):
        side.ask({"ready": True})
    side.log.close()
