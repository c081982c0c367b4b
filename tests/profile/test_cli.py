"""`ait-build profile` end to end without a GPU: in a project holding BERT-base and a copy of
the h200 target, --measure-only takes harness programs an earlier --compile-only would have
built (stand-ins speaking the harness protocol, placed with the digest of the sources it
renders), measures every problem, writes the profile, and a build of the spec then runs the
measured winners."""

from __future__ import annotations

import os
import shutil
import stat
import sys

import pytest

from ait_build.cli.main import main
from ait_build.pipeline import build_plan, find_target
from ait_build.profile import run as profile_run
from ait_build.profile.harness import render_harness
from ait_build.profile.run import DIGEST, gather_jobs
from ait_build.spec.profile import own_profile_path, read_entries

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = "sm90_coop_128x64x64_c1x1_streamk"

# answers a GEMM problem line (id, 10 sizes, 2 flags, count, candidates): FAST takes 2 us,
# every other candidate 5 us, the heuristic 6 us; all match the reference
FAKE = r'''#!{python}
import json, sys
names = {names}
print(json.dumps({{"device": "Fake GPU", "sm_count": 132}}), flush=True)
for line in sys.stdin:
    words = line.split()
    pid, indices = words[0], [int(v) for v in words[14:]]
    for c in [-1] + indices:
        print(json.dumps({{"start": pid, "config": c}}), flush=True)
        us = 6.0 if c < 0 else (2.0 if names[c] == "{fast}" else 5.0)
        print(json.dumps({{"problem": pid, "config": c, "us": us, "rel_err": 1e-4, "nonfinite": 0}}), flush=True)
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copytree(os.path.join(REPO, "specs"), tmp_path / "specs")
    os.makedirs(tmp_path / "targets")
    shutil.copy(os.path.join(REPO, "targets", "h200.yaml"), tmp_path / "targets" / "h200.yaml")
    (tmp_path / "SConstruct").write_text("# test project\n")
    monkeypatch.setattr(profile_run, "project_root", lambda start=None: str(tmp_path))
    return tmp_path


def place_fake_harnesses(root, target) -> list:
    """What --compile-only leaves: per kernel group, a program and the digest of its sources."""
    jobs, backend = gather_jobs(["bert_base"], target, {"batch": [1]}, print)
    for job in jobs:
        folder = root / "build" / "h200" / "profile" / job.group
        harness = render_harness(job, backend, str(folder))
        program = folder / "harness"
        program.write_text(FAKE.format(python=sys.executable, fast=FAST,
                                       names=[c.name for c in harness.candidates]))
        program.chmod(program.stat().st_mode | stat.S_IEXEC)
        (folder / DIGEST).write_text(harness.digest)
    return jobs


def test_measure_only_writes_a_profile_that_builds_read(project, capsys):
    target = find_target(str(project / "targets" / "h200.yaml"))
    jobs = place_fake_harnesses(project, target)
    assert {j.family for j in jobs} == {"gemm float16 b=col act=none align=8,8,8",
                                        "gemm float16 b=col act=gelu align=8,8,8"}
    assert main(["profile", "bert_base", "--target", "h200", "--batch", "1", "--measure-only"]) == 0
    out = capsys.readouterr().out
    assert "[1/2]" in out and "heuristic 6.0 us (3.00x)" in out and "wrote" in out
    assert "note: measuring on" not in out  # the fake GPU has h200's 132 SMs
    text = (project / "profiles" / "h200.yaml").read_text()
    assert text.count("\n  - {family: ") == 4  # BERT's four GEMM shapes at 128 rows
    assert text.count(f"config: \"{FAST}\"") == 4 and 'measured_on: "Fake GPU (132 SMs)"' in text
    plan = build_plan(str(project / "specs" / "bert_base.yaml"), target)
    assert plan.tuning.profiled == plan.tuning.calls == 48
    qkv = next(s for s in plan.steps if s.node.endswith(".attention.self.qkv"))
    names = [dict(p.context).get("tile") for p in qkv.kernel.parts]
    assert "128, 64, 64" in names  # the measured winner is a part of the kernel
    # a second run finds everything in the journal and changes nothing
    before = text
    assert main(["profile", "bert_base", "--target", "h200", "--batch", "1", "--measure-only"]) == 0
    assert (project / "profiles" / "h200.yaml").read_text() == before


# nvcc's stand-in for --compile-only: tells its version and writes the file after -o
FAKE_NVCC = """#!/bin/sh
if [ "$1" = --version ]; then echo "Cuda compilation tools, release 13.0, V$FAKE_NVCC_VERSION"; exit 0; fi
out=""
while [ $# -gt 0 ]; do if [ "$1" = -o ]; then out="$2"; fi; shift; done
echo "built by the stand-in" > "$out"
"""


def test_compile_only_builds_the_harnesses_as_model_steps(project, tmp_path, monkeypatch, capfd):
    """--compile-only through the harness SConstruct: every source compiles and every program
    links with [k/n] progress lines; a second run compiles nothing; a new compiler version
    compiles everything again (the toolchain Value of a model build's steps)."""
    pytest.importorskip("cutlass_library")  # the h200 toolchain's headers (the cuda extra)
    fake = tmp_path / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text(FAKE_NVCC)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NVCC_VERSION", "13.0.88")
    monkeypatch.delenv("AIT_BUILD_CACHE", raising=False)
    args = ["profile", "bert_base", "--target", "h200", "--batch", "1", "--compile-only", "-j2"]
    target = find_target(str(project / "targets" / "h200.yaml"))
    jobs, backend = gather_jobs(["bert_base"], target, {"batch": [1]}, print)
    harnesses = [render_harness(job, backend, str(project / "build" / "h200" / "profile" / job.group))
                 for job in jobs]
    steps = sum(len(h.sources) + 1 for h in harnesses)  # each source, then the link
    assert main(args) == 0
    lines = progress_lines(capfd)
    assert len(lines) == steps and lines[-1].startswith(f"[{steps}/{steps}] linking harness ")
    for h in harnesses:
        assert (project / "build" / "h200" / "profile" / h.group / h.program).is_file()
        assert (project / "build" / "h200" / "profile" / h.group / DIGEST).read_text() == h.digest
    assert main(args) == 0
    assert progress_lines(capfd) == []
    monkeypatch.setenv("FAKE_NVCC_VERSION", "13.0.99")
    assert main(args) == 0
    assert len(progress_lines(capfd)) == steps


def progress_lines(capfd) -> list:
    """The build's `[k/n] compiling ...` and `[k/n] linking ...` lines printed since the last call."""
    return [line for line in capfd.readouterr().out.splitlines()
            if line.startswith("[") and ("] compiling " in line or "] linking " in line)]


def test_measuring_on_another_gpu_than_the_target_says_so(project, capsys):
    path = project / "targets" / "h200.yaml"
    path.write_text(path.read_text().replace("sm_count: 132", "sm_count: 108"))
    place_fake_harnesses(project, find_target(str(path)))
    assert main(["profile", "bert_base", "--target", "h200", "--batch", "1", "--measure-only"]) == 0
    out = capsys.readouterr().out
    assert out.count("note: measuring on Fake GPU with 132 SMs; target 'h200' records 108") == 1


def test_measure_only_refuses_harnesses_built_from_other_sources(project, capsys):
    target = find_target(str(project / "targets" / "h200.yaml"))
    for job in place_fake_harnesses(project, target):
        (project / "build" / "h200" / "profile" / job.group / DIGEST).write_text("stale")
    assert main(["profile", "bert_base", "--target", "h200", "--batch", "1", "--measure-only"]) == 1
    assert "--compile-only` first" in capsys.readouterr().err


def test_profile_refuses_cpu_targets_and_unknown_dims(project, capsys):
    shutil.copy(os.path.join(REPO, "targets", "cpu.yaml"), project / "targets" / "cpu.yaml")
    assert main(["profile", "bert_base", "--target", "cpu", "--measure-only"]) == 1
    assert "cpu backend, whose kernels have no configurations to profile" in capsys.readouterr().err
    assert main(["profile", "resnet50", "--target", "h200", "--dim", "seq=128", "--measure-only"]) == 1
    assert "no spec given has a dim 'seq'" in capsys.readouterr().err


def test_kernels_narrows_the_profile_to_some_families(project, capsys):
    target = find_target(str(project / "targets" / "h200.yaml"))
    place_fake_harnesses(project, target)
    argv = ["profile", "bert_base", "--target", "h200", "--batch", "1", "--measure-only"]
    assert main(argv + ["--kernels", "act=gelu"]) == 0
    assert "[1/1] gemm float16 b=col act=gelu" in capsys.readouterr().out
    text = (project / "profiles" / "h200.yaml").read_text()
    assert text.count("\n  - {family: ") == 1 and "act=gelu" in text
    assert main(argv + ["--kernels", "act=none"]) == 0  # the other family joins, gelu's stays
    assert (project / "profiles" / "h200.yaml").read_text().count("\n  - {family: ") == 4


def test_a_stock_targets_profile_is_written_into_the_project(project, capsys, monkeypatch):
    """`ait-build profile` of a stock target copies the stock profile into the project's
    profiles/ first (saying so) and merges there, never into ait-build's own file; builds in the
    project then read the project's copy and the build's hint points there."""
    os.remove(project / "targets" / "h200.yaml")  # the stock h200
    monkeypatch.chdir(project / "specs")  # the project around the working directory
    target = find_target("h200", str(project / "targets"))
    stock = own_profile_path(target)
    assert stock.startswith(REPO) and os.path.isfile(stock)
    with open(stock, "rb") as fh:
        stock_bytes = fh.read()
    plan = build_plan(str(project / "specs" / "bert_base.yaml"), target)
    assert plan.tuning.profile == stock and plan.tuning.writes_to == str(project / "profiles" / "h200.yaml")
    place_fake_harnesses(project, target)
    assert main(["profile", "bert_base", "--target", "h200", "--batch", "1", "--measure-only"]) == 0
    out = capsys.readouterr().out
    assert "copied the stock profile of 'h200' into the project as profiles/h200.yaml" in out
    mine = project / "profiles" / "h200.yaml"
    with open(stock, "rb") as fh:
        assert fh.read() == stock_bytes  # ait-build's own profile is left alone
    kept, _ = read_entries(stock)
    merged, measured_on = read_entries(str(mine))
    assert set(kept) <= set(merged) and measured_on == "Fake GPU (132 SMs)"
    assert sum(e["config"] == FAST for e in merged.values()) >= 4
    plan = build_plan(str(project / "specs" / "bert_base.yaml"), target)
    assert plan.tuning.profile == str(mine) and plan.tuning.profiled == plan.tuning.calls
