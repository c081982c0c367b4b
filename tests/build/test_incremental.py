"""Incremental SCons builds: what a change rebuilds, and nothing more."""

from __future__ import annotations

import os
import shutil

from buildproj import MODEL, USE_FAKE


def _plan(project):
    """Emission of the project's spec, as the build sees it."""
    import ait_build.spec.target as tmod
    if USE_FAKE:
        import fake_codegen as codegen
    else:
        import ait_build.codegen.emit as codegen
    target = tmod.find_target("cpu", project.path("targets"))
    cwd = os.getcwd()
    os.chdir(project.root)  # the fake reads templates/ from the working directory
    try:
        return codegen.plan_outputs(project.path("specs", f"{MODEL}.yaml"), target)
    finally:
        os.chdir(cwd)


def _basenames(paths) -> set:
    return {os.path.basename(p) for p in paths}


def test_clean_build_outputs(built):
    names = sorted(os.listdir(built.out()))
    for expected in (f"lib{MODEL}.so", f"{MODEL}.h", "manifest.json", "weights.safetensors", "src"):
        assert expected in names
    emission = _plan(built)
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
    emission = _plan(project)
    total = 1 + len(emission.kernel_sources) + 1 + 1  # generate, objects, link
    lines = [line for line in result.out.splitlines() if line.startswith("[")]
    assert lines[0] == f"[1/{total}] generating {len(emission.files)} files (cpu/{MODEL})"
    assert lines[-1] == f"[{total}/{total}] linking lib{MODEL}.so (cpu/{MODEL})"
    assert result.steps("compiling") == _basenames(emission.kernel_sources + [emission.model_source])


def test_layer_change_rebuilds_its_kernels_model_and_link(fresh):
    before = _plan(fresh)
    fresh.edit(f"specs/{MODEL}.yaml", "out_features: 16", "out_features: 24")
    after = _plan(fresh)
    result = fresh.scons("target=cpu", "--debug=explain")
    changed = set(after.kernel_sources) - set(before.kernel_sources)
    assert changed, "the edit should give some kernel a new signature"
    assert result.steps("compiling") == _basenames(changed) | {os.path.basename(after.model_source)}
    assert len(changed) < len(after.kernel_sources)
    assert result.steps("linking") == {f"lib{MODEL}.so"}


def test_template_edit_rebuilds_only_kernels_rendered_from_it(fresh):
    emission = _plan(fresh)
    users: dict = {}
    for src in emission.kernel_sources:
        for template in emission.template_deps[src]:
            users.setdefault(template, set()).add(src)
    # a template behind some kernels but not all, and not behind the model source
    template, sources = min(((t, s) for t, s in users.items()
                             if len(s) < len(emission.kernel_sources)
                             and t not in emission.template_deps[emission.model_source]),
                            key=lambda ts: (len(ts[1]), ts[0]))
    with open(fresh.path("templates", template), "a", encoding="utf-8") as fh:
        fh.write("\nstatic const int ait_test_edit = 1;\n")
    result = fresh.scons("target=cpu")
    assert result.steps("generating")
    assert result.steps("compiling") == _basenames(sources)


def test_included_template_is_a_dependency(fresh):
    """Editing a template that others `{% import %}` regenerates (found by the .j2 scanner)."""
    emission = _plan(fresh)
    direct = {t for deps in emission.template_deps.values() for t in deps}
    root = fresh.path("templates")
    every = {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}
    imported = sorted(every - direct)
    assert imported, "no template is only reached through include/import"
    with open(os.path.join(root, imported[0]), "a", encoding="utf-8") as fh:
        fh.write("\n{# edited by a test #}\n")
    result = fresh.scons("target=cpu", "--debug=explain")
    assert result.steps("generating")
    assert not result.steps("compiling")  # a comment renders to the same bytes


def test_ait_build_change_regenerates(fresh, tmp_path):
    """A change in the package's codegen sources invalidates generation (the package digest Value
    node); a change in runtime/ does not."""
    shutil.copytree(fresh.pythonpath, str(tmp_path / "pkg"))
    fresh.pythonpath = str(tmp_path / "pkg")
    assert fresh.scons("target=cpu").steps("generating") == set()
    with open(tmp_path / "pkg" / "ait_build" / "runtime" / "__init__.py", "a") as fh:
        fh.write("\n# edited by a test\n")
    assert fresh.scons("target=cpu").steps("generating") == set()
    with open(tmp_path / "pkg" / "ait_build" / "ir" / "graph.py", "a") as fh:
        fh.write("\n# edited by a test\n")
    result = fresh.scons("target=cpu", "--debug=explain")
    assert result.steps("generating")
    assert "`ait_build sources " in result.out
    assert not result.steps("compiling")
