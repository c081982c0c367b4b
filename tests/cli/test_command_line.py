"""The `ait-build` command itself: --version, help for every command and argument with
examples, exit statuses (0 done, 1 input error, 2 usage, 3 internal) and one error prefix."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

import pytest

from ait_build import __version__
from ait_build.build.invoke import relayed_error
from ait_build.cli.commands import COMMANDS
from ait_build.cli.main import build_parser, main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _commands(parser) -> dict:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"ait-build {__version__}\n"


def test_every_command_and_argument_has_help_and_every_command_examples():
    parser = build_parser()
    assert parser.description.rstrip().endswith(".") and "examples:" in parser.epilog
    commands = _commands(parser)
    assert {"check", "graph", "reference", "build", "run", "bench", "init", "targets"} <= set(commands)
    for name, command in commands.items():
        assert command.description and command.description.rstrip().endswith("."), name
        assert command.epilog.startswith("examples:\n  ait-build "), name
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


def test_help_prints_whole_sentences():
    out = subprocess.run([sys.executable, "-m", "ait_build", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "shared library per model and target." in " ".join(out.split())


def test_usage_errors_exit_2(capsys):
    """A usage error is one line that names the command and where its usage is."""
    for argv, command in ((["nonsense"], "ait-build"), (["build"], "ait-build build"),
                          (["run", "x", "--batch", "two"], "ait-build run"),
                          # an option the command does not have points at its own help
                          (["serve", "x", "--port", "1"], "ait-build serve")):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2, argv
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"{command}: error: ") and line.endswith(f"(see {command} --help)")


def test_input_errors_exit_1_internal_errors_3(tmp_path, capsys, monkeypatch):
    assert main(["check", str(tmp_path / "missing.yaml")]) == 1
    assert main(["graph", os.path.join(ROOT, "specs", "mlp.yaml"), "--target", "cpux"]) == 1
    err = capsys.readouterr().err
    assert "unknown target 'cpux' (did you mean 'cpu'?)" in err and "internal error" not in err

    def broken(args):
        raise KeyError("oops")

    monkeypatch.setattr("ait_build.cli.check.run", broken)
    assert main(["check", "x.yaml"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: KeyError: 'oops'") and "please report it" in err
    assert len(err.strip().splitlines()) == 1



@pytest.mark.parametrize("module", ["ait_build.cli.no_such_command", "ait_build.cli.args"])
def test_a_command_that_cannot_be_loaded_is_an_internal_error_naming_it(monkeypatch, capsys,
                                                                        module):
    """A module that is missing, or lacks what a command module has, fails every invocation
    loudly (exit 3) instead of the command silently disappearing from the parser."""
    monkeypatch.setattr("ait_build.cli.main.COMMANDS",
                        COMMANDS + (("broken", module, "a command that cannot load"),))
    assert main(["check", "x.yaml"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"internal error: the 'broken' command ({module}) cannot be loaded: ")
    assert "please report it" in err and len(err.strip().splitlines()) == 1


def test_every_row_of_the_command_table_is_a_command():
    assert [name for name in _commands(build_parser())] == [name for name, _, _ in COMMANDS]

def test_relayed_scons_errors_have_one_prefix():
    located = "/p/x.yaml:13:5: error: unknown op 'linar'"
    assert relayed_error(located + "\n", 2) == located
    assert relayed_error("scons: error: unknown target 'x'\n", 2) == "error: unknown target 'x'"
    assert relayed_error("", 2) == "error: the build failed (scons exited with 2)"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["check"], ["graph", "--format", "json"]])
def test_a_full_disk_under_stdout_is_an_error_not_an_internal_one(command):
    """`ait-build graph SPEC > out.txt` on a full disk (/dev/full fails every write with ENOSPC)
    used to say 'internal error ... please report it', exit 3."""
    spec = os.path.join(ROOT, "specs", "mlp.yaml")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "ait_build", command[0], spec, *command[1:]],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ("error: cannot write: No space left on device (the standard output, or "
                           "a file being written)\n")


def test_build_of_a_bad_spec_prints_its_located_error_once(tmp_path):
    """Through SCons in a subprocess, in a folder without SConstruct."""
    shutil.copy(os.path.join(ROOT, "specs", "mlp.yaml"), tmp_path / "m.yaml")
    with open(tmp_path / "m.yaml", "a") as fh:
        fh.write("bogus: 1\n")
    proc = subprocess.run([sys.executable, "-m", "ait_build", "build", "m.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines and all(line.count("error:") <= 1 for line in lines), proc.stderr
    assert any(line.startswith(str(tmp_path / "m.yaml") + ":") and "bogus" in line
               for line in lines), proc.stderr
