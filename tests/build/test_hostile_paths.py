"""Paths and flags reach the compiler as written: never through SCons' `$` substitution (where
`${...}` runs Python) nor a shell. A spec file name is data on `scons -n`, `scons -h`, a build,
`spec=` and `ait-build build`; so are a checkout path holding `$`, spaces and commas, and a target
link flag holding `$ORIGIN`."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from buildproj import ONE_OP, make_project

# a spec file name that runs Python where SCons substitutes it, and a shell command where a
# shell reads it ('/' cannot be in a file name, so both write into the working directory)
HOSTILE = "${__import__('os').system('touch PWNED_PY')}$(touch PWNED_SH)`touch PWNED_TICK`"


def _pwned(root: str) -> list:
    found = []
    for dirpath, _, files in os.walk(root):
        found += [os.path.join(dirpath, f) for f in files if f.startswith("PWNED")]
    return found


def _cli(project, *args):
    return subprocess.run([sys.executable, "-m", "ait_build", *args], cwd=project.root,
                          env=dict(os.environ, PYTHONPATH=project.root), capture_output=True,
                          text=True, timeout=600)


def _runs(build_dir: str, width: int = 8) -> None:
    """The built model loads (its identity checks pass) and computes relu."""
    from ait_build.runtime import Model
    x = np.linspace(-1, 1, 2 * width, dtype=np.float32).reshape(2, width)
    with Model(build_dir) as model:
        np.testing.assert_array_equal(model.run({"x": x})["act"], np.maximum(x, 0))


@pytest.fixture
def hostile(tmp_path):
    """A project whose specs/ holds mlp and a spec with a hostile file name (model 'pwn'); its
    objects may come from the run's cache: what is tested is what reads the name."""
    project = make_project(str(tmp_path / "proj"), shared_cache=True)
    for name in os.listdir(project.path("specs")):
        if name.endswith(".yaml") and name != "mlp.yaml":
            os.remove(project.path("specs", name))  # model=all: keep the run short
    with open(project.path("specs", HOSTILE + ".yaml"), "w", encoding="utf-8") as fh:
        fh.write(ONE_OP.format(name="pwn"))
    return project


def test_hostile_spec_file_name_runs_nothing(hostile):
    spec = hostile.path("specs", HOSTILE + ".yaml")
    assert hostile.scons("-n", "model=all", "target=cpu").rc == 0
    assert "known models:" in hostile.scons("-h").out
    assert not _pwned(hostile.root)
    result = hostile.scons("model=all", "target=cpu")
    assert "linking libpwn.so (cpu/pwn)" in result.out
    assert not _pwned(hostile.root)
    _runs(hostile.path("build", "cpu", "pwn"))
    os.remove(hostile.path("build", "cpu", "pwn", "libpwn.so"))
    hostile.scons(f"spec={spec}", "target=cpu")  # rebuilt through spec=
    proc = _cli(hostile, "build", spec, "--target", "cpu", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert not _pwned(hostile.root)
    _runs(hostile.path("build", "cpu", "pwn"))


def test_checkout_path_with_dollar_space_comma_and_quote(tmp_path):
    """The spec under the odd folders compiles there (`ait-build build`, the checkout's own
    cache); the mlp's objects may come from the run's cache: what is tested is its name."""
    project = make_project(str(tmp_path / "we$HOME ird, 'dir'" / "proj"), shared_cache=True)
    os.makedirs(project.path("specs", "a,b $x"))
    spec = project.path("specs", "a,b $x", "c,d.yaml")
    with open(spec, "w", encoding="utf-8") as fh:
        fh.write(ONE_OP.format(name="commas"))
    proc = _cli(project, "build", spec, "--target", "cpu", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    _runs(project.path("build", "cpu", "commas"))
    project.scons("target=cpu")  # the mlp by name, in the same checkout
    assert os.path.isfile(project.out("libmlp.so"))


def test_link_flag_with_dollar_reaches_the_linker(tmp_path):
    """`$ORIGIN` in a target's link flags is for the dynamic loader: it must arrive unexpanded
    (the objects may come from the run's cache)."""
    project = make_project(str(tmp_path / "proj"), shared_cache=True)
    with open(project.path("targets", "cpu.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    assert "link_flags: [-pthread]" in text
    with open(project.path("targets", "cpu_origin.yaml"), "w", encoding="utf-8") as fh:
        fh.write(text.replace("name: cpu", "name: cpu_origin")
                 .replace("link_flags: [-pthread]", "link_flags: [-pthread, '-Wl,-rpath,$ORIGIN/lib']"))
    project.scons("target=cpu_origin")
    with open(project.path("build", "cpu_origin", "mlp", "libmlp.so"), "rb") as fh:
        assert b"$ORIGIN/lib" in fh.read()


def test_two_specs_naming_one_model_are_refused(tmp_path):
    project = make_project(str(tmp_path / "proj"))
    with open(project.path("specs", "mlp_copy.yaml"), "w", encoding="utf-8") as fh:
        with open(project.path("specs", "mlp.yaml"), encoding="utf-8") as src:
            fh.write(src.read())
    result = project.scons("model=mlp,mlp_copy", "target=cpu", check=False)
    assert result.rc == 2
    assert result.err.strip().splitlines() == [
        f"scons: error: specs {project.path('specs', 'mlp.yaml')} and "
        f"{project.path('specs', 'mlp_copy.yaml')} both name model 'mlp' (build/cpu/mlp); rename one"]


def test_a_model_named_twice_is_built_once_and_a_folder_spec_says_so(tmp_path):
    project = make_project(str(tmp_path / "proj"))
    result = project.scons("model=mlp,mlp", "target=cpu", "-n")  # -n: nothing is compiled
    assert "linking libmlp.so (cpu/mlp)" in result.out, result.err
    result = project.scons(f"spec={tmp_path}", "target=cpu", "-n", check=False)
    assert result.rc == 2
    assert result.err.strip() == f"scons: error: spec file '{tmp_path}' is a directory, not a YAML file"


@pytest.mark.parametrize("cache, message", [
    ("/etc/passwd", "cache= '/etc/passwd' is not a directory"),
    ("/proc/ait-build-cache", "cannot create the cache folder"),
])
def test_bad_cache_folder_is_one_line(tmp_path, cache, message):
    project = make_project(str(tmp_path / "proj"))
    result = project.scons("target=cpu", f"cache={cache}", check=False)
    assert result.rc == 2 and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1 and message in result.err


def test_two_builds_in_one_checkout_take_turns(tmp_path):
    """The second build waits for the first (build/.lock) instead of linking half-written objects."""
    project = make_project(str(tmp_path / "proj"))
    env = dict(os.environ, PYTHONPATH=project.root)
    env.pop("AIT_BUILD_CACHE", None)
    cmd = [sys.executable, "-m", "SCons", "-Q", "-j1", "model=mlp", "target=cpu"]
    procs = [subprocess.Popen(cmd, cwd=project.root, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert any("waiting for the build running in this checkout" in err for _, err in results)
    _runs_mlp(project)


def _runs_mlp(project) -> None:
    from ait_build.runtime import Model
    with Model(project.out()) as model:
        out = model.run({"x": np.ones((2, 32), np.float32)})
    assert out["softmax"].shape == (2, 16)
