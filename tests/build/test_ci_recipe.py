"""Every step of the CI recipe (docs/ci.md, the workflow `ait-build init` writes) run here, as a
GitHub runner would: a push builds the checked-in specs for a100 and h200 with the pinned nvcc
from NVIDIA's wheels (no GPU, no system nvcc on PATH) and fills the cache; a pull request then
restores the cache, reads it without writing, and compiles nothing. Only the runner's own wiring
(checkout, setup-python, the cache and artifact actions) is played by this file instead."""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest
import yaml

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

    def __init__(self, workflow: dict, env: dict, package: str, saved_cache: str):
        self.workflow, self.base_env = workflow, env
        self.package, self.saved_cache = package, saved_cache

    def job(self, repo: str, event: str) -> dict:
        env = dict(self.base_env)
        env.update({k: expand(str(v), event) for k, v in self.workflow["env"].items()})
        env["AIT_BUILD_PACKAGE"] = self.package  # this checkout's wheel, not the release
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


def test_the_ci_recipe_builds_for_a100_and_h200_with_the_pinned_nvcc(tmp_path):
    with open(WORKFLOW) as fh:
        workflow = yaml.safe_load(fh)
    wheel = build_wheel(str(tmp_path))
    # setup-python: a fresh Python; no system nvcc (/usr/local/bin) on PATH
    env = user_env(make_venv(str(tmp_path / "venv")), keep_path=False)
    runner = Runner(workflow, env, f"ait-build[cuda] @ file://{wheel}", str(tmp_path / "saved"))
    init_project(str(tmp_path / "repo"))  # the user's repository, as `ait-build init` wrote it

    push = runner.job(str(tmp_path / "repo"), "push")
    assert "Cuda compilation tools, release 13.0, V13.0.88" in push["output"]
    assert "compiling gemm" in push["output"]
    names = [os.path.relpath(p, tmp_path / "repo") for p in push["uploaded"]]
    assert names == ["build/a100/mlp/manifest.json", "build/h200/mlp/manifest.json"]
    for path in push["uploaded"]:
        with open(path) as fh:
            compiler = json.load(fh)["compiler"]
        assert compiler["version"] == "13.0.88" and compiler["libraries"] == {"cutlass": "4.2.0"}
    saved = _cache_files(str(tmp_path / "saved"))
    assert saved

    # a pull request: a fresh checkout, the cache restored, read-only, not saved
    pr_repo = str(tmp_path / "pr" / "repo")
    shutil.copytree(tmp_path / "repo", pr_repo, ignore=shutil.ignore_patterns("build", ".ait-cache"))
    pr = runner.job(pr_repo, "pull_request")
    assert "compiling" not in pr["output"] and "from cache" in pr["output"], pr["output"]
    assert _cache_files(os.path.join(pr_repo, ".ait-cache")) == saved
    for target in ("a100", "h200"):
        for rel in ("libmlp.so", "manifest.json"):
            with open(tmp_path / "repo" / "build" / target / "mlp" / rel, "rb") as a, \
                    open(os.path.join(pr_repo, "build", target, "mlp", rel), "rb") as b:
                assert a.read() == b.read(), (target, rel)
