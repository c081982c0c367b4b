"""The spec and --target arguments every command shares (cli/args.py): one definition, one help
text, and a spec given as a file or as a model name under the project's specs/ wherever a
command reads one (build, bench, profile, graph, reference, run --spec)."""

from __future__ import annotations

import argparse
import os
from types import SimpleNamespace

import pytest

from ait_build.cli.args import add_spec_argument, add_target_argument
from ait_build.cli.main import build_parser, main
from ait_build.cli.run import find_spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _commands() -> dict:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _action(parser, dest: str):
    found = [a for a in parser._actions if a.dest == dest]
    return found[0] if found else None


def _helper_action(add, dest: str, **kwargs):
    parser = argparse.ArgumentParser()
    add(parser, **kwargs)
    return _action(parser, dest)


@pytest.mark.parametrize("command,many", [("build", False), ("bench", False), ("graph", False),
                                          ("reference", False), ("profile", True)])
def test_spec_argument_is_the_shared_one(command, many):
    ours = _action(_commands()[command], "spec")
    shared = _helper_action(add_spec_argument, "spec", many=many)
    assert (ours.help, ours.nargs, ours.option_strings) == \
        (shared.help, shared.nargs, shared.option_strings)


@pytest.mark.parametrize("command,kwargs,default,required", [
    ("build", {}, "cpu", False),
    ("bench", {}, "cpu", False),
    ("graph", {"default": None, "purpose": "optimize the graph for this target", "paths": True},
     None, False),
    ("profile", {"default": None, "required": True, "purpose": "the cuda target to profile",
                 "paths": True}, None, True),
])
def test_target_argument_is_the_shared_one(command, kwargs, default, required):
    ours = _action(_commands()[command], "target")
    shared = _helper_action(add_target_argument, "target", **kwargs)
    assert (ours.help, ours.default, ours.required) == (shared.help, default, required)
    assert "a name from `ait-build targets`" in ours.help and "e.g. --target h200" in ours.help
    assert ("(default: cpu)" in ours.help) == (default == "cpu")
    assert ("(required)" in ours.help) == required


def test_target_help_words():
    assert _helper_action(add_target_argument, "target").help == \
        "a name from `ait-build targets` (default: cpu), e.g. --target h200"


@pytest.mark.parametrize("command", [["graph"], ["reference", "--random-input"]])
def test_graph_and_reference_take_a_model_name(command, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # the checkout is a project: SConstruct, specs/
    assert main([command[0], "specs/mlp.yaml", *command[1:]]) == 0
    by_path = capsys.readouterr().out
    assert main([command[0], "mlp", *command[1:]]) == 0
    assert capsys.readouterr().out == by_path and by_path


def test_a_missing_model_name_names_the_file_looked_for(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["graph", "no_such_model"]) == 1
    err = capsys.readouterr().err
    assert os.path.join("specs", "no_such_model.yaml") in err and "no such file" in err


def test_run_spec_takes_a_model_name(monkeypatch):
    monkeypatch.chdir(ROOT)
    manifest = SimpleNamespace(name="mlp")
    expected = os.path.join(ROOT, "specs", "mlp.yaml")
    assert find_spec(manifest, None) == expected
    assert find_spec(manifest, "mlp") == expected
    assert find_spec(manifest, "specs/mlp.yaml") == "specs/mlp.yaml"  # a path, as given


def test_build_of_a_folder_says_it_is_one(tmp_path, capsys):
    assert main(["build", str(tmp_path), "--target", "cpu"]) == 1
    err = capsys.readouterr().err
    assert f"spec file '{tmp_path}' is a directory, not a YAML file" in err, err
    assert main(["build", str(tmp_path / "none.yaml"), "--target", "cpu"]) == 1
    assert "not found" in capsys.readouterr().err
