"""`ait-build init` and `ait-build targets` in-process, and the packaging they rely on: every
package folder is in the wheel's list, init's SConstruct is the checkout's."""

from __future__ import annotations

import os
import tomllib

from ait_build.cli.init import INIT_FILES
from ait_build.cli.main import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_package_folder_is_listed_for_the_wheel():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        listed = set(tomllib.load(fh)["tool"]["setuptools"]["packages"])
    on_disk = {os.path.relpath(d, ROOT).replace(os.sep, ".")
               for d, _, files in os.walk(os.path.join(ROOT, "ait_build"))
               if "__pycache__" not in d and any(f.endswith(".py") for f in files)}
    assert on_disk <= listed, sorted(on_disk - listed)


def test_init_writes_the_checkouts_sconstruct():
    with open(os.path.join(ROOT, "SConstruct")) as a, \
            open(os.path.join(ROOT, "ait_build", "project_files", "SConstruct")) as b:
        assert a.read() == b.read()


def test_init_keeps_existing_files(tmp_path, capsys):
    assert main(["init", str(tmp_path / "p")]) == 0
    assert set(INIT_FILES) == {os.path.relpath(os.path.join(d, f), tmp_path / "p")
                               for d, _, fs in os.walk(tmp_path / "p") for f in fs}
    (tmp_path / "p" / "specs" / "mlp.yaml").write_text("# mine\n")
    capsys.readouterr()
    assert main(["init", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert f"kept {tmp_path / 'p' / 'specs' / 'mlp.yaml'} (exists)" in out
    assert (tmp_path / "p" / "specs" / "mlp.yaml").read_text() == "# mine\n"
    (tmp_path / "f").write_text("")
    assert main(["init", str(tmp_path / "f")]) == 1
    assert "exists and is not a folder" in capsys.readouterr().err


def test_init_refuses_the_file_system_root(capsys):
    assert main(["init", "/"]) == 1
    assert "'/' is the root of the file system" in capsys.readouterr().err
    assert not os.path.exists("/SConstruct")


def test_targets_show_and_copy(tmp_path, capsys, monkeypatch):
    main(["init", str(tmp_path / "p")])
    monkeypatch.chdir(tmp_path / "p" / "specs")  # the project around the working directory
    capsys.readouterr()
    assert main(["targets", "--show", "h200"]) == 0
    assert "name: h200" in capsys.readouterr().out
    assert main(["targets", "--copy", "h20"]) == 1
    assert "unknown target 'h20' (did you mean 'h200'?)" in capsys.readouterr().err
    assert main(["targets", "--copy", "a100"]) == 0
    assert (tmp_path / "p" / "targets" / "a100.yaml").is_file()
    assert main(["targets", "--copy", "a100"]) == 1
    assert "exists; edit it there" in capsys.readouterr().err
    assert main(["targets"]) == 0
    rows = {line.split()[0]: line.split()[3] for line in capsys.readouterr().out.splitlines()[1:8]}
    assert rows == {"a100": "project", "cpu": "stock", "cpu_mkl": "stock", "cpu_openblas": "stock",
                    "h100": "stock", "h200": "stock", "mi250": "stock"}


def test_init_files_name_what_the_new_project_has(tmp_path):
    """The SConstruct's example builds a model the project has; the .gitignore names where SCons
    writes (its database is under build/); CI installs from ci/requirements.txt, pinned to this
    ait-build, with the nvcc wheels the missing-nvcc message names."""
    from ait_build import __version__
    from ait_build.backends.toolchain import INSTALL_HINTS, NVCC_WHEELS
    assert main(["init", str(tmp_path / "p")]) == 0
    project = tmp_path / "p"
    models = {f[:-5] for f in os.listdir(project / "specs")}
    sconstruct = (project / "SConstruct").read_text()
    assert {m for m in models if f"model={m}" in sconstruct} == models
    assert "resnet50" not in sconstruct
    ignored = [line for line in (project / ".gitignore").read_text().splitlines()
               if line and not line.startswith("#")]
    assert "/build/" in ignored and not any("sconsign" in line for line in ignored)
    requirements = (project / "ci" / "requirements.txt").read_text().splitlines()
    pins = [line for line in requirements if line and not line.startswith("#")]
    assert pins == [f"ait-build[cuda]=={__version__}", *NVCC_WHEELS]
    assert all(wheel in INSTALL_HINTS["nvcc"] for wheel in NVCC_WHEELS)
    assert "pip install -r ci/requirements.txt" in (
        project / ".github" / "workflows" / "ait-build.yml").read_text()


def test_install_cutlass_leaves_out_the_python_packages_dependencies(capsys):
    from ait_build.backends.cuda.toolchain import CUTLASS_WHEEL
    assert main(["install-cutlass", "--dry-run"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.endswith(f"-m pip install --no-deps {CUTLASS_WHEEL}"), line


def test_check_without_files_checks_the_projects_specs_and_targets(tmp_path, capsys, monkeypatch):
    main(["init", str(tmp_path / "p")])
    (tmp_path / "p" / "specs" / "blocks").mkdir()
    (tmp_path / "p" / "specs" / "blocks" / "bad.yaml").write_text("kind: Blocks\n")
    monkeypatch.chdir(tmp_path / "p" / "specs")
    assert main(["targets", "--copy", "cpu"]) == 0
    (tmp_path / "p" / "profiles").mkdir()
    (tmp_path / "p" / "profiles" / "cpu.yaml").write_text(
        "apiVersion: ait-build/v1\nkind: Profile\ntarget: cpu\nentries: []\n")
    capsys.readouterr()
    assert main(["check"]) == 1  # the bad blocks file fails; the others are checked all the same
    out, err = capsys.readouterr()
    assert "mlp.yaml: ok" in out and "cpu.yaml: ok (target: cpu" in out, out
    assert os.path.join("profiles", "cpu.yaml") + ": ok (profile: 0 entries)" in out, out
    assert "bad.yaml:" in err, err
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 1
    assert "no spec files given" in capsys.readouterr().err


def test_one_bad_project_target_is_listed_with_its_error(tmp_path, capsys, monkeypatch):
    """`ait-build targets` lists every target even when one file of the project's is broken:
    that row shows '?', its error follows the table, and the exit status is 1."""
    main(["init", str(tmp_path / "p")])
    (tmp_path / "p" / "targets" / "bad.yaml").write_text(
        "apiVersion: ait-build/v1\nkind: Target\nname: bad\nbackend: nope\n")
    monkeypatch.chdir(tmp_path / "p")
    capsys.readouterr()
    assert main(["targets"]) == 1
    out, err = capsys.readouterr()
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:] if line.strip()}
    assert rows["bad"] == "?" and rows["cpu"] == "cpu" and rows["h200"] == "cuda"
    assert "bad.yaml:1:1: error:" in err
    assert main(["targets", "--show", ""]) == 1
    assert "--show needs a target name or file" in capsys.readouterr().err


def test_init_of_an_empty_folder_name_says_what_to_give(capsys):
    assert main(["init", ""]) == 1
    assert "give the project folder" in capsys.readouterr().err
