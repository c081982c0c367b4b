"""Build errors a person can act on: one message, non-zero exit, never a traceback."""

from __future__ import annotations

import pytest

from buildproj import make_project


@pytest.fixture
def project(tmp_path):
    return make_project(str(tmp_path / "proj"))


@pytest.mark.parametrize("args, words", [
    (["target=cpux"], ["unknown target 'cpux'", "did you mean 'cpu'", "known targets: a100, cpu"]),
    (["target=cpu", "traget=cpu"], ["unknown variable 'traget'", "did you mean 'target'", "model"]),
    (["target=cpu", "model=mlpp"], ["unknown model 'mlpp'", "did you mean 'mlp'"]),
    (["target=cpu", "cache_readonly=maybe"], ["cache_readonly= takes 0 or 1"]),
])
def test_bad_variables_list_the_valid_ones(project, args, words):
    result = project.scons(*args, check=False)
    assert result.rc != 0
    for word in words:
        assert word in result.err
    assert "Traceback" not in result.err + result.out


def test_missing_compiler_names_target_and_what_to_install(project):
    with open(project.path("targets", "cpu.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    with open(project.path("targets", "nocc.yaml"), "w", encoding="utf-8") as fh:
        fh.write(text.replace("name: cpu", "name: nocc").replace("cxx: g++", "cxx: g++-not-installed"))
    result = project.scons("target=nocc", check=False)
    assert result.rc != 0
    assert "nocc" in result.err and "g++-not-installed" in result.err and "install" in result.err
    assert "Traceback" not in result.err + result.out
    assert len(result.err.strip().splitlines()) <= 2


def test_help_lists_targets_and_models(project):
    result = project.scons("-h")
    assert "known targets:" in result.out and "mlp" in result.out
