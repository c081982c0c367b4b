"""Fuzzing names and paths through check -> build -> load.

Any name `check` accepts must build and load; any it refuses is one located error, which
`ait-build build` repeats before SCons starts. The spec lies under a folder and a file name of
random characters (`$`, `${...}`, quotes, commas, spaces, backquotes, non-ASCII), which only ever
reach the build as data. Builds are slow, so the default run builds a handful of examples
(AIT_BUILD_FUZZ_EXAMPLES=N for more); the check-only property runs many.
"""

from __future__ import annotations

import keyword
import os
import re
import subprocess
import sys
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from buildproj import make_project

BUILDS = int(os.environ.get("AIT_BUILD_FUZZ_EXAMPLES", "4"))
SPEC = """apiVersion: ait-build/v1
kind: Model
name: {model}
dims:
  {dim}: {{max: 4, opt: 3}}
inputs:
  {input}: {{shape: [{dim}, 5]}}
graph:
  - {{name: {node}, op: relu}}
outputs: [{node}]
"""
PATH_CHARS = "abcXYZ019 $,'\"`;(){}&|*!#@~-_.=%+[]^µ🙂"
MODEL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
TENSOR_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")

models = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,15}", fullmatch=True)
tensors = st.from_regex(r"[A-Za-z0-9_.-]{1,24}", fullmatch=True)
dims = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s))
path_parts = st.text(alphabet=PATH_CHARS, min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..") and s.strip())
anything = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=24)


def _q(text: str) -> str:
    """A YAML double-quoted scalar holding exactly `text`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _spec(model, dim, input_name, node) -> str:
    return SPEC.format(model=_q(model), dim=_q(dim) if dim else '""', input=_q(input_name),
                       node=_q(node))


def _cli(project, *args):
    return subprocess.run([sys.executable, "-m", "ait_build", *args], cwd=project.root,
                          env=dict(os.environ, PYTHONPATH=project.root), capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return make_project(str(tmp_path_factory.mktemp("fuzz") / "proj"))


@settings(max_examples=BUILDS, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(model=models, dim=dims, input_name=tensors, node=tensors, folder=path_parts,
       file=path_parts)
def test_accepted_names_and_any_path_build_and_load(project, model, dim, input_name, node,
                                                    folder, file):
    assume(input_name != node)
    from ait_build.runtime import Model
    where = os.path.join(project.root, "specs", f"{folder}{uuid.uuid4().hex[:6]}")
    os.makedirs(where)
    spec = os.path.join(where, f"{file}.yaml")
    with open(spec, "w", encoding="utf-8") as fh:
        fh.write(_spec(model, dim, input_name, node))
    check = _cli(project, "check", spec)
    assert check.returncode == 0, check.stderr
    built = _cli(project, "build", spec, "--target", "cpu", "-j", "2")
    assert built.returncode == 0, built.stderr
    assert not [n for n in os.listdir(project.root) if n.startswith("PWNED")]
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
    with Model(project.path("build", "cpu", model)) as loaded:
        assert list(loaded.inputs) == [input_name] and list(loaded.outputs) == [node]
        np.testing.assert_array_equal(loaded.run({input_name: x})[node], np.maximum(x, 0))


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=anything, dim=anything, input_name=anything, node=anything)
def test_check_accepts_exactly_the_names_every_layer_carries(tmp_path, model, dim, input_name, node):
    from ait_build.errors import SpecError
    from ait_build.pipeline import check_file
    spec = tmp_path / "fuzz.yaml"
    spec.write_text(_spec(model, dim, input_name, node), encoding="utf-8")
    valid = (MODEL_NAME.fullmatch(model) and TENSOR_NAME.fullmatch(input_name)
             and TENSOR_NAME.fullmatch(node) and IDENTIFIER.fullmatch(dim)
             and not keyword.iskeyword(dim) and input_name != node)
    try:
        check_file(str(spec))
    except SpecError as exc:
        assert not valid, str(exc)
        assert re.fullmatch(rf"{re.escape(str(spec))}:\d+:\d+: error: [^\n]+", str(exc)), str(exc)
    else:
        assert valid


def test_refused_name_stops_the_build_with_checks_error(project):
    spec = project.path("specs", "fuzz_refused.yaml")
    with open(spec, "w", encoding="utf-8") as fh:
        fh.write(_spec("m", "batch", "x", "out*/ int pwn; /*"))
    check, built = _cli(project, "check", spec), _cli(project, "build", spec, "--target", "cpu")
    assert check.returncode == built.returncode == 1
    assert check.stderr == built.stderr and check.stderr.count("\n") == 1
    assert f"{spec}:9:12: error: node name 'out*/ int pwn; /*' may only hold" in check.stderr
    os.remove(spec)
