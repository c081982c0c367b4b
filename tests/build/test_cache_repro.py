"""Shared CacheDir and reproducible builds: two checkouts, one cache, identical bytes."""

from __future__ import annotations

import filecmp
import os
import re

from buildproj import MODEL, make_project


def _cache_files(cache: str) -> set:
    return {os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs if f != "config"}


SECOND = "mlp_relu"  # mlp with relu after fc1 and 8 outputs: its fc2 and softmax kernels are mlp's


def _with_second_model(project):
    with open(project.path("specs", f"{MODEL}.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    for old, new in ((f"name: {MODEL}", f"name: {SECOND}"), ("{op: gelu}", "{op: relu}"),
                     ("out_features: 16", "out_features: 8")):
        assert old in text
        text = text.replace(old, new)
    with open(project.path("specs", f"{SECOND}.yaml"), "w", encoding="utf-8") as fh:
        fh.write(text)
    return project


def _compiled(out: str) -> list:
    """Every source compiled, once per time (the slow-step report of a compile is not a second)."""
    return re.findall(r"^\[\d+/\d+\] compiling (\S+) \([^)]*\)$", out, re.M)


def test_a_kernel_of_two_models_compiles_once_and_serves_a_second_checkout(tmp_path):
    first = _with_second_model(make_project(str(tmp_path / "a")))
    result = first.scons("target=cpu", f"model={MODEL},{SECOND}")  # the default cache
    plans = [first.plan(MODEL), first.plan(SECOND)]
    kernels = [{os.path.basename(k) for k in plan.kernel_sources} for plan in plans]
    shared = kernels[0] & kernels[1]
    assert len(shared) >= 2, kernels  # fc2's linear and the softmax
    per_model = [os.path.basename(p) for plan in plans for p in (plan.model_source, plan.id_source)]
    compiled = _compiled(result.out)
    # every kernel once, shared or not, and each model's own sources
    assert sorted(compiled) == sorted(list(kernels[0] | kernels[1]) + per_model), result.out
    retrieved = set(re.findall(r"Retrieved `([^']+)' from cache", result.out))
    for name in shared:  # one model compiled it, the other fetched it
        objects = {os.path.join("build", "cpu", model, "obj", name.replace(".cpp", ".os"))
                   for model in (MODEL, SECOND)}
        assert len(objects & retrieved) == 1, result.out
    assert _cache_files(first.path("build", "cache"))

    second = _with_second_model(make_project(str(tmp_path / "b")))
    cache = first.path("build", "cache")
    result = second.scons("target=cpu", f"model={MODEL},{SECOND}", f"cache={cache}")
    retrieved = set(re.findall(r"Retrieved `([^']+)' from cache", result.out))
    assert not result.steps("compiling") and not result.steps("generating"), result.out
    for model in (MODEL, SECOND):
        objects = {os.path.join("build", "cpu", model, "obj", f)
                   for f in os.listdir(second.path("build", "cpu", model, "obj"))}
        assert objects <= retrieved
        assert os.path.join("build", "cpu", model, f"lib{model}.so") in retrieved


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


def test_cache_is_on_in_build_unless_named_or_off(tmp_path, monkeypatch):
    from ait_build.build.cache import cache_folder
    monkeypatch.delenv("AIT_BUILD_CACHE", raising=False)
    assert cache_folder({}, "/p") == (os.path.join("/p", "build", "cache"), "the default cache")
    assert cache_folder({"cache": "/c"}, "/p") == ("/c", "cache=")
    assert cache_folder({"cache": "off"}, "/p")[0] == cache_folder({"cache": ""}, "/p")[0] == ""
    monkeypatch.setenv("AIT_BUILD_CACHE", "/shared")
    assert cache_folder({}, "/p") == ("/shared", "AIT_BUILD_CACHE")
    monkeypatch.setenv("AIT_BUILD_CACHE", "off")
    assert cache_folder({}, "/p")[0] == ""

    project = make_project(str(tmp_path / "p"))
    project.scons("target=cpu", "cache=off", "-n")
    assert not os.path.exists(project.path("build", "cache"))
    project.scons("target=cpu", "-n")
    assert os.path.isdir(project.path("build", "cache"))
