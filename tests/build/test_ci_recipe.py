"""Every step of the CI recipe (docs/ci.md, the workflow and ci/requirements.txt `ait-build init`
writes) run here, as a GitHub runner would: a push installs from the requirements file (its
ait-build line pointing at this checkout's wheel, kept in the repository), builds the checked-in
specs for cpu, a100 and h200 with the pinned nvcc from NVIDIA's wheels (no GPU, no system nvcc on
PATH), checks the cpu build, packages every build and fills the cache; a pull request then
restores the cache, reads it without writing, compiles nothing and packages the same bytes.
Only the runner's own wiring (checkout, setup-python, the cache and artifact actions) is played
by this file instead."""

from __future__ import annotations

import glob
import json
import os
import shutil
import tarfile

import pytest
import yaml

from ait_build import __version__
from ait_build.cli.init import init_project
from installed import REPO, build_wheel, make_venv, run, user_env

pytestmark = pytest.mark.nvcc  # compiles CUTLASS kernels for two GPUs: minutes on 2 cores

WORKFLOW = os.path.join(REPO, "ait_build", "project_files", "ait-build.yml")
# the expressions the workflow uses, per event
EXPRESSIONS = {
    "github.event_name == 'pull_request' && '1' || '0'": {"push": "0", "pull_request": "1"},
    "github.event_name != 'pull_request'": {"push": True, "pull_request": False},
    "github.sha": {"push": "0123abc", "pull_request": "4567def"},
}


def expand(text, event: str):
    """`${{ expr }}` in a workflow value, for `event`; an unknown expression fails the test."""
    if not isinstance(text, str) or "${{" not in text:
        return text
    start, end = text.index("${{"), text.index("}}")
    expr = text[start + 3:end].strip()
    assert expr in EXPRESSIONS, f"the test does not know the expression {expr!r}"
    value = EXPRESSIONS[expr][event]
    return expand(text[:start] + str(value) + text[end + 2:], event)


def condition(step: dict, event: str) -> bool:
    if "if" not in step:
        return True
    expr = step["if"].strip()
    assert expr in EXPRESSIONS, f"the test does not know the condition {expr!r}"
    return EXPRESSIONS[expr][event]


class Runner:
    """Plays a hosted runner for the workflow's jobs.build.steps in `repo`."""

    def __init__(self, workflow: dict, env: dict, saved_cache: str):
        self.workflow, self.base_env, self.saved_cache = workflow, env, saved_cache

    def job(self, repo: str, event: str) -> dict:
        env = dict(self.base_env)
        env.update({k: expand(str(v), event) for k, v in self.workflow["env"].items()})
        github_path = os.path.join(repo, "..", f"github_path_{event}")
        open(github_path, "w").close()
        env["GITHUB_PATH"] = github_path
        uploaded, outputs = [], []
        for step in self.workflow["jobs"]["build"]["steps"]:
            if not condition(step, event):
                continue
            uses = step.get("uses", "")
            with_ = {k: expand(v, event) for k, v in step.get("with", {}).items()}
            if "run" in step:
                step_env = dict(env, **{k: expand(str(v), event) for k, v in step.get("env", {}).items()})
                outputs.append(run(step["run"], cwd=repo, env=step_env).stdout)
                with open(github_path) as fh:  # the runner prepends GITHUB_PATH to PATH
                    added = [line.strip() for line in fh if line.strip()]
                env["PATH"] = os.pathsep.join(added + [env["PATH"]])
            elif uses.startswith("actions/cache/restore@"):
                if os.path.isdir(self.saved_cache):
                    shutil.copytree(self.saved_cache, os.path.join(repo, with_["path"]))
            elif uses.startswith("actions/cache/save@"):
                shutil.rmtree(self.saved_cache, ignore_errors=True)
                shutil.copytree(os.path.join(repo, with_["path"]), self.saved_cache)
            elif uses.startswith("actions/upload-artifact@"):
                uploaded = sorted(glob.glob(os.path.join(repo, with_["path"])))
            else:
                assert uses.startswith(("actions/checkout@", "actions/setup-python@")), uses
        return {"uploaded": uploaded, "output": "\n".join(outputs)}


def _cache_files(folder: str) -> dict:
    return {os.path.relpath(os.path.join(d, f), folder): os.path.getsize(os.path.join(d, f))
            for d, _, fs in os.walk(folder) for f in fs}


def vendor_wheel(repo: str, wheel: str) -> None:
    """The requirements file's documented wheel route: the wheel kept in the repository's ci/
    and named on the ait-build line in place of the release."""
    path = os.path.join(repo, "ci", "requirements.txt")
    with open(path) as fh:
        lines = fh.read().splitlines()
    release = f"ait-build[cuda]=={__version__}"
    assert release in lines  # pinned to the ait-build that ran init
    shutil.copy(wheel, os.path.join(repo, "ci"))
    vendored = f"./ci/{os.path.basename(wheel)}[cuda]"
    with open(path, "w") as fh:
        fh.write("\n".join(vendored if line == release else line for line in lines) + "\n")


def _manifest(archive: str) -> dict:
    with tarfile.open(archive) as tar:
        (member,) = [m for m in tar.getmembers() if m.name.endswith("/manifest.json")]
        return json.load(tar.extractfile(member))


def test_the_ci_recipe_builds_checks_and_packages_with_the_pinned_nvcc(tmp_path):
    with open(WORKFLOW) as fh:
        workflow = yaml.safe_load(fh)
    wheel = build_wheel(str(tmp_path))
    # setup-python: a fresh Python; no system nvcc (/usr/local/bin) on PATH
    env = user_env(make_venv(str(tmp_path / "venv")), keep_path=False)
    runner = Runner(workflow, env, str(tmp_path / "saved"))
    init_project(str(tmp_path / "repo"))  # the user's repository, as `ait-build init` wrote it
    vendor_wheel(str(tmp_path / "repo"), wheel)

    push = runner.job(str(tmp_path / "repo"), "push")
    assert "Cuda compilation tools, release 13.0, V13.0.88" in push["output"]
    assert "compiling gemm" in push["output"]
    assert "check softmax:" in push["output"] and "--no-deps nvidia-cutlass==4.2.0.0" in push["output"]
    names = [os.path.relpath(p, tmp_path / "repo") for p in push["uploaded"]]
    assert names == ["dist/mlp-a100.tar.gz", "dist/mlp-cpu.tar.gz", "dist/mlp-h200.tar.gz"]
    for path in push["uploaded"]:
        compiler = _manifest(path)["compiler"]
        if "cpu" not in path:
            assert compiler["version"] == "13.0.88" and compiler["libraries"] == {"cutlass": "4.2.0"}
    with tarfile.open(push["uploaded"][1]) as tar:  # cpu: the BLAS it loads travels with it
        assert "mlp/libscipy_openblas.so" in tar.getnames()
    saved = _cache_files(str(tmp_path / "saved"))
    assert saved

    # a pull request: a fresh checkout, the cache restored, read-only, not saved
    pr_repo = str(tmp_path / "pr" / "repo")
    shutil.copytree(tmp_path / "repo", pr_repo,
                    ignore=shutil.ignore_patterns("build", ".ait-cache", "dist"))
    pr = runner.job(pr_repo, "pull_request")
    assert "compiling" not in pr["output"] and "from cache" in pr["output"], pr["output"]
    assert _cache_files(os.path.join(pr_repo, ".ait-cache")) == saved
    for path in push["uploaded"]:
        with open(path, "rb") as a, open(os.path.join(pr_repo, os.path.relpath(
                path, tmp_path / "repo")), "rb") as b:
            assert a.read() == b.read(), path
