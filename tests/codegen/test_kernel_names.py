"""A kernel's name hashes what decides its code (codegen/kernel.py): the content of its template
and of every template that one extends, includes or imports, not the template's path; and its
op, context and parameter list."""

from __future__ import annotations

import shutil

import pytest

from ait_build.codegen import kernel, render


@pytest.fixture
def templates(tmp_path, monkeypatch):
    """A copy of templates/ that rendering and kernel names read instead of ait-build's own."""
    root = tmp_path / "templates"
    shutil.copytree(render.templates_dir(), root)
    monkeypatch.setattr(render, "templates_dir", lambda: str(root))
    caches = (render.environment, render.template_deps, kernel.template_digest)
    for cache in caches:
        cache.cache_clear()
    yield root
    for cache in caches:
        cache.cache_clear()


def name(template: str, **context) -> str:
    return kernel.make_kernel("k", "softmax", template, dict({"ctype": "float"}, **context),
                              [("float*", "out")]).name


def test_the_same_content_under_another_path_is_the_same_kernel(templates):
    shutil.copy(templates / "gpu" / "softmax.cu.j2", templates / "gpu" / "softmax_copy.cu.j2")
    assert name("gpu/softmax_copy.cu.j2") == name("gpu/softmax.cu.j2")
    assert name("gpu/softmax.cu.j2", ctype="__half") != name("gpu/softmax.cu.j2")


def test_a_change_anywhere_in_what_a_template_reads_renames_its_kernels(templates):
    softmax, elementwise, cpu = (name("gpu/softmax.cu.j2"), name("gpu/elementwise.cu.j2"),
                                 name("cpu/softmax.cpp.j2"))
    with open(templates / "common" / "_macros.j2", "a", encoding="utf-8") as fh:
        fh.write("{# imported by gpu/elementwise.cu.j2, not by gpu/softmax.cu.j2 #}\n")
    kernel.template_digest.cache_clear()
    assert name("gpu/elementwise.cu.j2") != elementwise
    assert name("gpu/softmax.cu.j2") == softmax
    with open(templates / "gpu" / "kernel.cu.j2", "a", encoding="utf-8") as fh:
        fh.write("{# extended by every GPU-layer kernel #}\n")
    kernel.template_digest.cache_clear()
    assert name("gpu/softmax.cu.j2") != softmax
    assert name("cpu/softmax.cpp.j2") == cpu
