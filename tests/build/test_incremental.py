"""Incremental SCons builds: what a change rebuilds, and nothing more."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from buildproj import MODEL


def _basenames(paths) -> set:
    return {os.path.basename(p) for p in paths}


def test_clean_build_outputs(built):
    names = sorted(os.listdir(built.out()))
    for expected in (f"lib{MODEL}.so", f"{MODEL}.h", "manifest.json", "weights.safetensors", "src"):
        assert expected in names
    emission = built.plan()
    for rel in emission.files:
        assert os.path.isfile(built.out(rel)), rel


def test_second_build_does_nothing(fresh):
    result = fresh.scons("target=cpu")
    assert "is up to date" in result.out
    assert not result.steps("compiling") and not result.steps("generating") and not result.steps("linking")


def test_progress_lines_count_steps(built, tmp_path):
    project = built.copy(str(tmp_path / "p"))
    shutil.rmtree(project.path("build"))
    result = project.scons("target=cpu")
    emission = project.plan()
    total = 1 + len(emission.compiled_sources) + 1  # generate, objects, link
    lines = [line for line in result.out.splitlines() if line.startswith("[")]
    assert lines[0] == f"[1/{total}] generating {len(emission.files)} files (cpu/{MODEL})"
    assert lines[-1] == f"[{total}/{total}] linking lib{MODEL}.so (cpu/{MODEL})"
    assert result.steps("compiling") == _basenames(emission.compiled_sources)


@pytest.mark.parametrize("old, new, new_kernel", [
    ("{op: gelu}", "{op: relu}", True),  # fc1's fused epilogue changes: one new kernel
    ("out_features: 16", "out_features: 24", False),  # sizes are run-time arguments of kernels
])
def test_layer_change_rebuilds_its_kernels_model_and_link(fresh, old, new, new_kernel):
    before = fresh.plan()
    fresh.edit(f"specs/{MODEL}.yaml", old, new)
    after = fresh.plan()
    result = fresh.scons("target=cpu", "--debug=explain")
    changed = set(after.kernel_sources) - set(before.kernel_sources)
    assert bool(changed) == new_kernel
    assert len(changed) < len(after.kernel_sources)
    assert result.steps("compiling") == _basenames(changed) | {
        os.path.basename(after.model_source), os.path.basename(after.id_source)}
    assert result.steps("linking") == {f"lib{MODEL}.so"}


def _edit_template(path: str) -> None:
    """Changes what a template renders: inside its first block when it extends another (text
    outside blocks of a child template is never rendered), else at its end."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    line = "\nstatic const int ait_test_edit = 1;\n"
    match = re.search(r"{%-?\s*block\s+\w+\s*-?%}", text)
    text = text[:match.end()] + line + text[match.end():] if match else text + line
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _renamed(before, after) -> set:
    """Kernel sources of `after` that `before` had under another name (or not at all)."""
    return set(after.kernel_sources) - set(before.kernel_sources)


def test_template_edit_rebuilds_only_kernels_rendered_from_it(fresh):
    emission = fresh.plan()
    users: dict = {}
    for src in emission.kernel_sources:
        for template in emission.template_deps[src]:
            users.setdefault(template, set()).add(src)
    # a template behind some kernels but not all, and not behind the model source
    template, sources = min(((t, s) for t, s in users.items()
                             if len(s) < len(emission.kernel_sources)
                             and t not in emission.template_deps[emission.model_source]),
                            key=lambda ts: (len(ts[1]), ts[0]))
    _edit_template(fresh.path(template))
    after = fresh.plan()
    # a kernel's name hashes its templates' content: the kernels rendered from the edited one
    # get new names (and files), the others keep theirs
    assert set(emission.kernel_sources) - set(after.kernel_sources) == sources
    renamed = _renamed(emission, after)
    assert len(renamed) == len(sources)
    result = fresh.scons("target=cpu")
    assert result.steps("generating")
    # with model.cpp, which calls them by name, and the one-line build id source
    assert result.steps("compiling") == _basenames(renamed) | {
        os.path.basename(emission.model_source), os.path.basename(emission.id_source)}


def test_template_reached_through_include_is_a_dependency(fresh):
    """Editing a template that others include or import regenerates (the .j2 scanner finds it
    even where the code generator lists only the templates it renders directly)."""
    from ait_build.build.scons import JINJA_REF
    emission = fresh.plan()
    used = {t for deps in emission.template_deps.values() for t in deps}
    referenced = set()
    for template in sorted(used):
        with open(fresh.path(template), encoding="utf-8") as fh:
            referenced.update("templates/" + ref for ref in JINJA_REF.findall(fh.read()))
    assert referenced, "no template of this model includes another"
    with open(fresh.path(sorted(referenced)[0]), "a", encoding="utf-8") as fh:
        fh.write("{# edited by a test #}")  # no newline: the rendered bytes stay the same
    result = fresh.scons("target=cpu", "--debug=explain")
    assert result.steps("generating")
    # a comment renders to the same bytes; only the kernels whose names hash the edited
    # template's content compile again, renamed, and with them model.cpp and the build id
    renamed = _renamed(emission, fresh.plan())
    assert result.steps("compiling") == (_basenames(renamed) | {
        os.path.basename(emission.model_source), os.path.basename(emission.id_source)}
        if renamed else set())


def test_ait_build_change_regenerates(fresh):
    """A change in the package's codegen sources invalidates generation (the package digest Value
    node); a change in runtime/ does not."""
    with open(fresh.path("ait_build", "runtime", "__init__.py"), "a") as fh:
        fh.write("\n# edited by a test\n")
    assert fresh.scons("target=cpu").steps("generating") == set()
    with open(fresh.path("ait_build", "ir", "graph.py"), "a") as fh:
        fh.write("\n# edited by a test\n")
    result = fresh.scons("target=cpu", "--debug=explain")
    assert result.steps("generating")
    assert "`ait_build sources " in result.out
    assert not result.steps("compiling")
