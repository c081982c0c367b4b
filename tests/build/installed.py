"""ait-build as a user gets it: the wheel built from this checkout, installed into a fresh
virtualenv, used from folders that hold no checkout. Shared by the wheel and CI-recipe tests."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, cwd: str, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    """Runs a command; a failure raises with its output."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          shell=isinstance(cmd, str), executable="/bin/bash" if isinstance(cmd, str) else None)
    if proc.returncode:
        shown = cmd if isinstance(cmd, str) else " ".join(cmd)
        raise AssertionError(f"`{shown}` failed ({proc.returncode}) in {cwd}:\n"
                             f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")
    return proc


def build_wheel(dest: str) -> str:
    """The wheel of this checkout (as CI builds it), in dest; returns its path."""
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dest, REPO], cwd=dest)
    (wheel,) = glob.glob(os.path.join(dest, "ait_build-*.whl"))
    return wheel


def make_venv(path: str) -> str:
    """A new virtualenv without ait-build; returns its bin/ folder."""
    run([sys.executable, "-m", "venv", path], cwd=os.path.dirname(path))
    return os.path.join(path, "bin")


def user_env(bin_dir: str, keep_path: bool = True) -> dict:
    """The environment of a user whose shell has the virtualenv activated: its bin/ first, no
    PYTHONPATH (nothing of this checkout can be imported) and no ait-build cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "AIT_BUILD_CACHE", "VIRTUAL_ENV", "PYTHONHOME")}
    rest = os.environ.get("PATH", "/usr/bin:/bin") if keep_path else "/usr/bin:/bin"
    env["PATH"] = f"{bin_dir}{os.pathsep}{rest}"
    env["VIRTUAL_ENV"] = os.path.dirname(bin_dir)
    return env
