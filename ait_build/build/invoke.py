"""Building one spec for one target from Python: SCons in a subprocess, in the project around the
working directory (what `ait-build build`, `bench` and `profile` call)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from ait_build.build.spec_list import join_paths
from ait_build.files.read import kind_of
from ait_build.errors import AitError, ReportedError
from ait_build.ir.resources import PACKAGE_DIR, project_root, project_spec
from ait_build.spec.model import load_model
from ait_build.spec.names import check_model_name
from ait_build.spec.yamlfile import load_yaml, where

# the SConstruct `ait-build init` writes; a folder without one builds through it
PROJECT_SCONSTRUCT = os.path.join(PACKAGE_DIR, "project_files", "SConstruct")


def spec_name(spec: str) -> str:
    """A spec's model name (its build folder), read without building the graph but with the
    spec loader's limits, and checked by the rules for model names."""
    doc = load_yaml(spec)
    if not isinstance(doc.get("name"), str):
        return load_model(spec).name  # reports the spec's own error, with its location
    check_model_name(doc["name"], where(doc, "name"))
    return doc["name"]


def resolve_spec(spec: str, root: str | None = None) -> str:
    """The absolute path of a spec given as a path or as a model name under specs/."""
    spec = project_spec(spec, root)
    if not os.path.exists(spec):
        raise AitError(f"spec file '{spec}' not found")
    if not os.path.isfile(spec):
        raise AitError(f"spec file '{spec}' is {kind_of(os.stat(spec).st_mode)}, not a YAML file")
    return os.path.abspath(spec)


def build(spec: str, target: str, jobs: int | None = None, cache: str | None = None,
          cache_readonly: bool = False, verbose: bool = False, root: str | None = None,
          quiet: bool = False, launcher: str = "") -> str:
    """Builds one spec (a path, or a model name under specs/) for one target; returns the build
    folder. SCons prints its progress; a failed build raises AitError. `launcher`: a compiler
    launcher by name (build/launcher.py), '' for none."""
    root = root or project_root()
    spec = resolve_spec(spec, root)
    name = load_model(spec).name  # the spec's own error, as `check` reports it, before SCons
    cmd = [sys.executable, "-m", "SCons", "-Q", "-C", root, f"target={target}",
           f"spec={join_paths([spec])}"]
    if not os.path.isfile(os.path.join(root, "SConstruct")):
        cmd[4:4] = ["-f", PROJECT_SCONSTRUCT]  # SCons' top folder stays `root`: its build/
    if jobs:
        cmd.append(f"-j{jobs}")
    if cache is not None:
        cmd.append(f"cache={cache}")
    if cache_readonly:
        cmd.append("cache_readonly=1")
    if verbose:
        cmd.append("verbose=1")
    if launcher:
        cmd.append(f"launcher={launcher}")
    proc = run_scons(cmd, stdout=subprocess.DEVNULL if quiet else None)
    if proc.returncode:
        raise ReportedError(relayed_error(proc.stderr, proc.returncode))
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    return os.path.join(root, "build", target, name)


# signals that stop ait-build but not, by themselves, the SCons it started (a terminal's Ctrl-C
# reaches both, being sent to the whole foreground process group)
FORWARDED = (signal.SIGTERM, signal.SIGHUP)


def run_scons(cmd: list, stdout=None) -> subprocess.CompletedProcess:
    """SCons in a subprocess, its stderr captured, never outliving us: a SIGTERM or SIGHUP to
    ait-build (a CI timeout, `kill`) is passed on to SCons, which starts no new step, lets the
    running ones finish and records what it built, as on Ctrl-C; then ait-build ends by the same
    signal, after SCons' last words. (Ending at once left SCons building on its own, into the
    folder the next build writes.)"""
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    received = []

    def forward(signum, _frame):
        received.append(signum)
        proc.send_signal(signum)

    try:
        previous = {sig: signal.signal(sig, forward) for sig in FORWARDED
                    if signal.getsignal(sig) is not signal.SIG_IGN}  # nohup's SIGHUP stays ignored
    except ValueError:  # not the main thread: signals are not ours to handle
        previous = {}
    try:
        _, stderr = proc.communicate()
    except KeyboardInterrupt:  # SCons stops too, as above; a second Ctrl-C kills it
        try:
            proc.send_signal(signal.SIGINT)
            proc.communicate()
        finally:
            proc.kill()
        raise
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        sys.stderr.write(stderr + f"interrupted ({signal.Signals(received[0]).name}): SCons "
                         "stopped after the steps it was running; the next build completes it\n")
        sys.stderr.flush()
        signal.raise_signal(received[0])
    return subprocess.CompletedProcess(cmd, proc.returncode, None, stderr)


def relayed_error(stderr: str, returncode: int) -> str:
    """SCons' error output as the CLI prints errors: located errors as they are, `scons: error:`
    lines as `error:`, and an `error:` line when nothing said what failed."""
    text = stderr.strip().replace("scons: error: ", "error: ")
    if "error:" not in text:
        text = (text + "\n" if text else "") + f"error: the build failed (scons exited with {returncode})"
    return text
