"""No build reports success while its outputs are inconsistent: a build killed after a spec edit
and then reverted, an output changed after it was built, and corrupt CacheDir entries are all
rebuilt, never taken as up to date (ait_build/build/integrity.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

from buildproj import MODEL

EDIT = ("{op: gelu}", "{op: relu}")  # a new fused kernel, a new model.cpp


def _bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _outputs(project) -> dict:
    names = [f"lib{MODEL}.so", f"lib{MODEL}.so.sha256", "manifest.json", "weights.safetensors",
             f"{MODEL}.h"]
    return {name: _bytes(project.out(name)) for name in names}


def _runs(project) -> None:
    from ait_build.runtime import Model
    with Model(project.out()) as model:
        assert model.run({"x": np.ones((2, 32), np.float32)})["softmax"].shape == (2, 16)


def test_sigkill_after_an_edit_then_revert_rebuilds_the_original(fresh):
    before = _outputs(fresh)
    fresh.edit(f"specs/{MODEL}.yaml", *EDIT)
    env = dict(os.environ, PYTHONPATH=fresh.root)
    env.pop("AIT_BUILD_CACHE", None)
    proc = subprocess.Popen([sys.executable, "-m", "SCons", "-Q", "-j1", f"model={MODEL}",
                             "target=cpu"], cwd=fresh.root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    for line in proc.stdout:  # killed while it compiles, after generation wrote the new sources
        if "] compiling " in line:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=600)
    assert proc.returncode == -signal.SIGKILL
    fresh.edit(f"specs/{MODEL}.yaml", EDIT[1], EDIT[0])
    result = fresh.scons("target=cpu")
    assert result.steps("generating")
    assert _outputs(fresh) == before  # byte for byte the build before the edit
    assert "is up to date" in fresh.scons("target=cpu").out
    _runs(fresh)


def test_edit_built_and_forgotten_then_reverted_rebuilds(fresh):
    """The worst case of a kill: every output of the edited build written, none recorded."""
    before = _outputs(fresh)
    signatures = fresh.path("build", ".sconsign.dblite")
    saved = _bytes(signatures)
    fresh.edit(f"specs/{MODEL}.yaml", *EDIT)
    fresh.scons("target=cpu")
    with open(signatures, "wb") as fh:
        fh.write(saved)
    fresh.edit(f"specs/{MODEL}.yaml", EDIT[1], EDIT[0])
    result = fresh.scons("target=cpu")
    assert result.steps("generating") and result.steps("linking")
    assert _outputs(fresh) == before
    _runs(fresh)


def test_output_changed_after_its_build_is_rebuilt(fresh):
    before = _outputs(fresh)
    with open(fresh.out(f"lib{MODEL}.so"), "r+b") as fh:
        fh.truncate(1000)
    with open(fresh.out("weights.safetensors"), "r+b") as fh:
        fh.seek(-4, os.SEEK_END)
        fh.write(b"\xff\xff\xff\x7f")
    result = fresh.scons("target=cpu")
    assert result.steps("linking") and result.steps("generating")
    assert _outputs(fresh) == before


def _cache_entries(cache: str) -> dict:
    """bytes -> path of every cache entry (their names are build signatures)."""
    entries = {}
    for dirpath, _, files in os.walk(cache):
        for name in files:
            if len(name) >= 32 and "." not in name:
                path = os.path.join(dirpath, name)
                entries[_bytes(path)] = path
    return entries


@pytest.fixture(scope="module")
def cached(built, tmp_path_factory):
    """A clean build of the model through a cache of its own, shared by the tests that damage
    the cache: each takes (the project, the cache folder) as copies of its own."""
    root = tmp_path_factory.mktemp("cached")
    first = built.copy(str(root / "first"))
    shutil.rmtree(first.path("build"))
    first.scons("target=cpu", f"cache={root / 'cache'}")
    return first, str(root / "cache")


def _own_copy(cached, tmp_path) -> tuple:
    first, cache = cached
    shutil.copytree(cache, tmp_path / "cache")
    return first.copy(str(tmp_path / "first")), str(tmp_path / "cache")


def test_corrupt_cache_entries_are_rebuilt_not_used(cached, tmp_path):
    first, cache = _own_copy(cached, tmp_path)
    good = _outputs(first)
    entries = _cache_entries(cache)
    library = entries[good[f"lib{MODEL}.so"]]
    weights = entries[good["weights.safetensors"]]
    assert os.path.isfile(library + ".sha256") and os.path.isfile(weights + ".sha256")
    with open(library, "r+b") as fh:  # a truncated library would die with SIGBUS in dlopen
        fh.truncate(4096)
    data = bytearray(_bytes(weights))  # flipped bits in a weight: wrong outputs, exit 0
    data[-3] ^= 0x40
    with open(weights, "wb") as fh:
        fh.write(data)
    second = first.copy(str(tmp_path / "second"))
    shutil.rmtree(second.path("build"))
    result = second.scons("target=cpu", f"cache={cache}")
    assert result.err.count("does not match the hash recorded when it was stored") == 2
    assert "Retrieved" in result.out  # the intact entries still serve
    assert _outputs(second) == good
    _runs(second)


def test_cache_entry_without_a_recorded_hash_is_not_used(cached, tmp_path):
    first, cache = _own_copy(cached, tmp_path)
    for dirpath, _, files in os.walk(cache):
        for name in files:
            if name.endswith(".sha256"):
                os.remove(os.path.join(dirpath, name))
    second = first.copy(str(tmp_path / "second"))
    shutil.rmtree(second.path("build"))
    result = second.scons("target=cpu", f"cache={cache}")
    assert "Retrieved" not in result.out and result.steps("linking")
    assert _outputs(second) == _outputs(first)
