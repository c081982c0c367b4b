"""A project `ait-build init` wrote in a folder whose path holds spaces, `$(...)`, backquotes and
`${HOME}`, built with its cache in that folder (SCons substitutes `$` in the paths it is given,
and drops `$(`...`$)` whatever the escaping: the signature database and the cache reach it
without substitution). That cache then serves other checkouts read-only, as docs/ci.md's pull
request builds use it (`cache_readonly=1` never takes SCons' lock on the cache's config), and
entries replaced by FIFOs are rebuilt instead of waited on."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from buildproj import ONE_OP, make_project

FOLDER = "sp ace $(touch PWNED_SH) `touch PWNED_TICK` ${HOME}"
SPEC = ONE_OP.format(name="tiny")


class Checkout:
    def __init__(self, root: str, package: str):
        self.root, self.package = root, package

    def scons(self, *args: str, wrap: tuple = ()):
        env = dict(os.environ, PYTHONPATH=self.package)
        env.pop("AIT_BUILD_CACHE", None)
        return subprocess.run([*wrap, sys.executable, "-m", "SCons", "-Q", "-j2", "target=cpu",
                               "model=tiny", *args], cwd=self.root, env=env, capture_output=True,
                              text=True, timeout=600)

    def library(self) -> str:
        return os.path.join(self.root, "build", "cpu", "tiny", "libtiny.so")

    def runs(self) -> None:
        from ait_build.runtime import Model
        x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
        with Model(os.path.dirname(self.library())) as model:
            np.testing.assert_array_equal(model.run({"x": x})["act"], np.maximum(x, 0))

    def clone(self, dest: str) -> "Checkout":
        os.makedirs(dest)
        for name in ("SConstruct", "specs", "targets"):
            src = os.path.join(self.root, name)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(dest, name))
        return Checkout(dest, self.package)


def _steps(proc, verb: str) -> set:
    return set(re.findall(rf"^\[\d+/\d+\] {verb} (\S+)", proc.stdout, re.M))


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """(the init'ed checkout, its filled cache): built once for the module."""
    base = tmp_path_factory.mktemp("hostile")
    package = make_project(str(base / "package")).root  # ait_build, templates/, targets/
    project = str(base / FOLDER / "proj")
    env = dict(os.environ, PYTHONPATH=package)
    init = subprocess.run([sys.executable, "-m", "ait_build", "init", project], env=env,
                          capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    with open(os.path.join(project, "specs", "tiny.yaml"), "w", encoding="utf-8") as fh:
        fh.write(SPEC)
    checkout = Checkout(project, package)
    cache = os.path.join(base, FOLDER, "cache")
    built = checkout.scons(f"cache={cache}")
    assert built.returncode == 0, built.stdout + built.stderr
    return checkout, cache


def test_init_and_build_in_a_folder_holding_shell_and_scons_syntax(filled):
    checkout, cache = filled
    assert os.path.isfile(checkout.library())
    assert os.path.isfile(os.path.join(cache, "config"))  # the cache is where it was told
    assert not [f for d, _, fs in os.walk(os.path.dirname(cache)) for f in fs
                if f.startswith("PWNED")]
    assert sorted(os.listdir(os.path.dirname(os.path.dirname(cache)))) == sorted([FOLDER, "package"])
    checkout.runs()


def _unshare_works() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount --bind / / 2>/dev/null; exit $?"],
        capture_output=True, timeout=60).returncode == 0


def test_a_read_only_mounted_cache_serves_a_pull_request_build(filled, tmp_path):
    """The cache on a read-only bind mount (in a user and mount namespace): every file comes from
    it and nothing is compiled. This is the real condition; it needs `unshare -rm`."""
    if not _unshare_works():
        pytest.skip("unshare -rm (user and mount namespaces) is not available here; "
                    "test_a_cache_whose_lock_cannot_be_taken_is_read_without_it still runs")
    source, cache = filled
    checkout = source.clone(str(tmp_path / "pr"))
    mount = ("unshare", "-rm", "sh", "-c", 'mount --bind "$0" "$0" && mount -o remount,bind,ro '
             '"$0" "$0" && ! touch "$0/probe" 2>/dev/null && exec "$@"', cache)
    proc = checkout.scons(f"cache={cache}", "cache_readonly=1", wrap=mount)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not _steps(proc, "compiling") and "libtiny.so' from cache" in proc.stdout
    checkout.runs()


def test_a_cache_whose_lock_cannot_be_taken_is_read_without_it(filled, tmp_path):
    """SCons locks the cache's config even to read it, by creating `config.lock` beside it: a
    read-only folder refuses that, and a lock file already there makes it wait and fail. With
    `config.lock` present (as a writer holding it leaves it), a read-only build must still read
    the cache at once; this shows no lock is taken, not that a read-only mount works."""
    source, cache = filled
    copy = str(tmp_path / "cache")
    shutil.copytree(cache, copy)
    open(os.path.join(copy, "config.lock"), "w").close()
    checkout = source.clone(str(tmp_path / "pr"))
    proc = checkout.scons(f"cache={copy}", "cache_readonly=1")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert not _steps(proc, "compiling") and "libtiny.so' from cache" in proc.stdout
    assert sorted(os.listdir(copy)) == sorted(os.listdir(cache) + ["config.lock"])


def test_cache_entries_replaced_by_fifos_are_rebuilt_not_waited_on(filled, tmp_path):
    """The library's entry and an object's recorded hash become FIFOs: the build reads neither
    (it used to wait forever, deaf to SIGTERM), rebuilds both files and the library runs."""
    source, cache = filled
    copy = str(tmp_path / "cache")
    shutil.copytree(cache, copy)
    built = {}
    for folder, _, files in os.walk(os.path.dirname(source.library())):
        for name in files:
            with open(os.path.join(folder, name), "rb") as fh:
                built[fh.read()] = name
    replaced = []
    for folder, _, files in os.walk(copy):
        for name in files:
            path = os.path.join(folder, name)
            if len(name) != 32:
                continue
            with open(path, "rb") as fh:
                what = built.get(fh.read())
            target = {"libtiny.so": path, "model.os": path + ".sha256"}.get(what)
            if target:
                os.remove(target)
                os.mkfifo(target)
                replaced.append(what)
    assert sorted(replaced) == ["libtiny.so", "model.os"]
    checkout = source.clone(str(tmp_path / "second"))
    proc = checkout.scons(f"cache={copy}", "cache_readonly=1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _steps(proc, "compiling") == {"model.cpp"} and _steps(proc, "linking") == {"libtiny.so"}
    checkout.runs()


def test_a_cache_that_cannot_be_used_is_one_message_not_a_stack(filled, tmp_path):
    """A cache folder whose config is not SCons' (or that cannot be locked or read) stops the
    build with what to do, instead of SCons' Python stack."""
    source, _ = filled
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config").write_text("junk{")
    checkout = source.clone(str(tmp_path / "co"))
    proc = checkout.scons(f"cache={broken}")
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr
    assert "File \"" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert f"the cache {broken} cannot be used" in proc.stdout + proc.stderr
    assert "cache=off" in proc.stdout + proc.stderr
