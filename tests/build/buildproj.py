"""Test projects for the SCons builds: a tmp folder with the SConstruct, specs/, targets/,
templates/ and the package, so tests never touch the repository's build/. SCons runs in a
subprocess, as a user runs it.

A project whose builds only prepare a test (a model built once per module, then read or copied)
builds through the run's shared CacheDir (shared_cache.py): the first such build of mlp in the
run compiles it, every other one fetches it. A copy, and a project of a test that watches which
steps run, builds through its own cache, build/cache, as a user's checkout does."""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from types import SimpleNamespace

from shared_cache import cache_folder

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = "mlp"
# the smallest model a build compiles every kind of object for: one kernel, model.cpp and
# build_id.cpp (ONE_OP.format(name=...))
ONE_OP = """apiVersion: ait-build/v1
kind: Model
name: {name}
dims: {{batch: {{max: 4}}}}
inputs:
  x: {{shape: [batch, 8]}}
graph:
  - {{name: act, op: relu}}
outputs: [act]
"""


@dataclass
class Result:
    rc: int
    out: str
    err: str

    def steps(self, verb: str) -> set:
        """Files named by progress lines '[k/n] <verb> FILE (...)'."""
        return set(re.findall(rf"^\[\d+/\d+\] {verb} (\S+)", self.out, re.M))


PLAN_SCRIPT = """
import dataclasses, json, os, sys
root, spec = sys.argv[1], sys.argv[2]
from ait_build.pipeline import find_target, plan_outputs
emission = plan_outputs(spec, find_target("cpu", os.path.join(root, "targets")))
print(json.dumps(dict(dataclasses.asdict(emission), compiled_sources=emission.compiled_sources)))
"""


class Project:
    """A checkout-like folder: SConstruct, specs/, targets/, templates/ and its own copy of the
    ait_build package (first on PYTHONPATH, so the code generator renders this project's
    templates and edits to the copy count)."""

    def __init__(self, root: str, shared_cache: bool = False):
        self.root = root
        self.shared_cache = shared_cache  # build through the run's CacheDir unless cache= is given

    def scons(self, *args: str, check: bool = True, env: dict | None = None) -> Result:
        extra, env = env or {}, dict(os.environ)
        env.pop("AIT_BUILD_CACHE", None)  # a developer's cache must not serve the tests
        env.update(extra)
        env["PYTHONPATH"] = self.root
        defaults = [] if any(a.startswith("model=") for a in args) else [f"model={MODEL}"]
        if self.shared_cache and not any(a.startswith("cache=") for a in args):
            defaults.append(f"cache={cache_folder('scons')}")
        proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-j2", *defaults, *args],
                              cwd=self.root, env=env, capture_output=True, text=True, timeout=600)
        result = Result(proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode:
            raise AssertionError(f"scons failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return result

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def out(self, *parts: str) -> str:
        return self.path("build", "cpu", MODEL, *parts)

    def edit(self, rel: str, old: str, new: str) -> None:
        with open(self.path(rel), encoding="utf-8") as fh:
            text = fh.read()
        assert old in text, f"{old!r} not in {rel}"
        with open(self.path(rel), "w", encoding="utf-8") as fh:
            fh.write(text.replace(old, new, 1))

    def copy(self, dest: str, shared_cache: bool = False) -> "Project":
        """A copy at `dest` (copy_tree); `shared_cache`: its builds go through the run's CacheDir."""
        copy_tree(self.root, dest)
        return Project(dest, shared_cache)

    def plan(self, model: str = MODEL) -> SimpleNamespace:
        """The Emission of a spec as this project's package plans it (in a subprocess)."""
        # run in the project: `python -c` puts the working directory first on sys.path, and the
        # repository's own package there would shadow this project's copy (and its templates)
        proc = subprocess.run([sys.executable, "-c", PLAN_SCRIPT, self.root,
                               self.path("specs", f"{model}.yaml")], cwd=self.root,
                              env=dict(os.environ, PYTHONPATH=self.root), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return SimpleNamespace(**json.loads(proc.stdout))


_SNAPSHOT: list = []


def copy_tree(src: str, dest: str) -> None:
    """A copy of a project or build folder. Files the build hard-linked (a cpu build's BLAS,
    hundreds of MB of MKL) are linked again, being shared already; every other file is copied,
    so edits to the copy never reach the original. The precompiled kernel header (build/<target>/
    .pch, 76 MB) stays behind: a build makes it again where it compiles a kernel."""
    shutil.copytree(src, dest, symlinks=True, copy_function=_link_if_shared,
                    ignore=shutil.ignore_patterns(".pch"))


def _link_if_shared(src: str, dst: str) -> None:
    if os.stat(src).st_nlink > 1:
        try:
            os.link(src, dst)
            return
        except OSError:  # another filesystem
            pass
    shutil.copy2(src, dst)


def package_snapshot() -> str:
    """A copy of the ait_build package taken once per test run and put first on PYTHONPATH:
    builds compare signatures across runs, and edits others make meanwhile must not count."""
    if not _SNAPSHOT:
        import ait_build
        root = tempfile.mkdtemp(prefix="ait_build_pkg_")
        atexit.register(shutil.rmtree, root, True)
        shutil.copytree(os.path.dirname(os.path.abspath(ait_build.__file__)),
                        os.path.join(root, "ait_build"), ignore=shutil.ignore_patterns("__pycache__"))
        _SNAPSHOT.append(root)
    return _SNAPSHOT[0]


def make_project(dest: str, shared_cache: bool = False) -> Project:
    """A fresh project at `dest` (sources only); `shared_cache`: its builds go through the run's
    CacheDir."""
    os.makedirs(dest)
    shutil.copy(os.path.join(REPO, "SConstruct"), dest)
    shutil.copytree(os.path.join(REPO, "specs"), os.path.join(dest, "specs"))
    shutil.copytree(os.path.join(REPO, "targets"), os.path.join(dest, "targets"))
    shutil.copytree(os.path.join(REPO, "templates"), os.path.join(dest, "templates"))
    # the package sits in the project, as in a checkout: the code generator finds its templates
    # beside the package, and PYTHONPATH puts this copy before the installed one
    shutil.copytree(os.path.join(package_snapshot(), "ait_build"), os.path.join(dest, "ait_build"))
    return Project(dest, shared_cache)


NVCC_VERSION = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""


def fake_compiler(folder: str, name: str, version_text: str) -> str:
    """An executable `folder/name` that prints `version_text` for --version and fails on
    anything else: enough for steps that render sources and record versions, not compile."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        fh.write(f'#!/bin/sh\nif [ "$1" = --version ]; then cat <<"EOF"\n{version_text}EOF\n'
                 'exit 0; fi\necho "$0: cannot compile, a stand-in" >&2; exit 1\n')
    os.chmod(path, 0o755)
    return path
