"""Shared CacheDir and reproducible builds: two checkouts, one cache, identical bytes."""

from __future__ import annotations

import filecmp
import os
import re

from buildproj import MODEL, make_project


def _cache_files(cache: str) -> set:
    return {os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs if f != "config"}


def test_warm_cache_serves_a_second_checkout(tmp_path):
    cache = str(tmp_path / "cache")
    first = make_project(str(tmp_path / "a"))
    first.scons("target=cpu", f"cache={cache}")
    assert _cache_files(cache)

    second = make_project(str(tmp_path / "b"))
    result = second.scons("target=cpu", f"cache={cache}")
    retrieved = set(re.findall(r"Retrieved `([^']+)' from cache", result.out))
    assert not result.steps("compiling") and not result.steps("generating"), result.out
    objects = {os.path.join("build", "cpu", MODEL, "obj", f) for f in os.listdir(second.out("obj"))}
    assert objects <= retrieved
    assert os.path.join("build", "cpu", MODEL, f"lib{MODEL}.so") in retrieved


def test_cache_from_environment_and_read_only(tmp_path):
    cache = str(tmp_path / "cache")
    first = make_project(str(tmp_path / "a"))
    first.scons("target=cpu", f"cache={cache}")
    before = _cache_files(cache)
    first.edit(f"specs/{MODEL}.yaml", "out_features: 16", "out_features: 20")
    result = first.scons("target=cpu", f"cache={cache}", "cache_readonly=1")
    assert result.steps("compiling")
    assert _cache_files(cache) == before  # read-only: nothing pushed

    second = make_project(str(tmp_path / "b"))
    result = second.scons("target=cpu", env={"AIT_BUILD_CACHE": cache})
    assert "from cache" in result.out and not result.steps("compiling")


def test_two_clean_builds_are_byte_identical(tmp_path):
    a = make_project(str(tmp_path / "one" / "checkout"))
    b = make_project(str(tmp_path / "second-place"))
    a.scons("target=cpu")
    b.scons("target=cpu")
    cmp = filecmp.dircmp(a.out(), b.out())
    assert not cmp.left_only and not cmp.right_only
    for rel in ["manifest.json", f"{MODEL}.h", "weights.safetensors", f"lib{MODEL}.so"] + \
            [os.path.join("src", f) for f in os.listdir(a.out("src"))] + \
            [os.path.join("obj", f) for f in os.listdir(a.out("obj"))]:
        assert filecmp.cmp(a.out(rel), b.out(rel), shallow=False), f"{rel} differs"
