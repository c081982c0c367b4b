"""The SCons rules of profiling harnesses (ait_build/profile/build.py), dry run: every source of
every harness gets a compile step and each harness a link, through the target's toolchain.
Needs nvcc (the toolchain check), compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ait_build.pipeline import find_target
from ait_build.profile import run as profile_run
from ait_build.profile.harness import render_harness

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.nvcc


def test_dry_run_compiles_each_source_and_links_each_harness(tmp_path):
    target = find_target(os.path.join(REPO, "targets", "a100.yaml"))
    jobs, backend = profile_run.gather_jobs([os.path.join(REPO, "specs", "bert_base.yaml")],
                                            target, {"batch": [1]}, print)
    harnesses = [render_harness(j, backend, str(tmp_path / "build" / "a100" / "profile" / j.group))
                 for j in jobs]
    listing = tmp_path / "harnesses.json"
    listing.write_text(json.dumps({"target": target.source, "harnesses": [
        {"group": h.group, "folder": os.path.relpath(h.folder, tmp_path), "sources": list(h.sources),
         "program": h.program} for h in harnesses]}))
    script = os.path.join(os.path.dirname(profile_run.__file__), "sconstruct.py")
    proc = subprocess.run([sys.executable, "-m", "SCons", "-n", "-Q", "-f", script, "-C", str(tmp_path),
                           f"listing={listing}"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    sources = sum(len(h.sources) for h in harnesses)
    assert proc.stdout.count("compiling ") == sources
    assert proc.stdout.count("linking harness") == len(harnesses)
