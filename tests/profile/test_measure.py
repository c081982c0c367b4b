"""The profiler's measuring loop against a stand-in harness (a script speaking the harness's
protocol, templates/cuda/profile.cu.j2): results land in the journal, a candidate that kills the
process is recorded as failed and the others are still measured, a second run measures nothing
again, and the winners merge into the profile file."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from ait_build.codegen.tuning import Config, Profile, Tunable
from ait_build.errors import AitError
from ait_build.ir.dims import Dim
from ait_build.profile.harness import Harness
from ait_build.profile.jobs import Problem, dim_points
from ait_build.profile.measure import Journal, measure, problem_line
from ait_build.profile.report import choose
from ait_build.spec.profile import read_entries, read_profile, write_profile

CONFIGS = (Config("big", "sm80", ()), Config("small", "sm80", ()), Config("fast", "sm90", ()),
           Config("crashes", "sm90", ()), Config("wrong", "sm90", ()))

# answers every problem: times by name, 'wrong' off by 50%, 'crashes' kills the process
FAKE = r'''#!{python}
import json, sys
names = {names}
times = {{"big": 9.0, "small": 7.0, "fast": 3.0, "wrong": 1.0}}
log = open({log!r}, "a")
print(json.dumps({{"device": "Fake GPU", "sm_count": 4}}), flush=True)
for line in sys.stdin:
    log.write(line)
    words = line.split()  # id, 4 scalars, has_bias, has_res, count, candidates
    pid, indices = words[0], [int(v) for v in words[8:]]
    assert int(words[7]) == len(indices)
    for c in [-1] + indices:
        print(json.dumps({{"start": pid, "config": c}}), flush=True)
        name = "heuristic" if c < 0 else names[c]
        if name == "crashes":
            sys.exit(7)
        us = 8.0 if c < 0 else times[name]
        err = 0.5 if name == "wrong" else 1e-4
        print(json.dumps({{"problem": pid, "config": c, "us": us, "rel_err": err,
                          "nonfinite": 0}}), flush=True)
'''


def tunable(n: int) -> Tunable:
    return Tunable(kind="gemm", family="gemm float16 b=col act=none align=8,8,8",
                   problem=(("n", n), ("k", 64), ("l", 1)), extent=Dim.of("batch") * 4,
                   scalars=(("M", Dim.of("batch") * 4), ("N", n), ("K", 64), ("alpha", 1.0)),
                   operands=(("bias", True), ("res", False)), candidates=CONFIGS,
                   ladder=CONFIGS[:2])


def fake_harness(tmp_path) -> Harness:
    program = tmp_path / "harness"
    log = tmp_path / "stdin.log"
    program.write_text(FAKE.format(python=sys.executable, names=[c.name for c in CONFIGS],
                                   log=str(log)))
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return Harness("gemm_x", str(tmp_path), ("src/a.cu",), "harness", "digest1", CONFIGS)


def problems() -> list:
    return [Problem(tunable(n), 4 * b, (("M", 4 * b), ("N", n), ("K", 64), ("alpha", 1.0)))
            for n in (64, 128) for b in (1, 8)]


def test_problem_line_lists_scalars_flags_and_candidates():
    p = problems()[0]
    assert problem_line("p0", p, [0, 2]) == "p0 4 64 64 1.0 1 0 2 0 2"


def test_a_crashing_candidate_is_recorded_and_the_rest_measured(tmp_path):
    harness = fake_harness(tmp_path)
    journal = Journal.load(str(tmp_path / "journal.jsonl"))
    said, device = [], {}
    results = measure(harness, problems(), journal, device, said.append)
    assert device == {"device": "Fake GPU", "sm_count": 4}
    for p in problems():
        got = results[p.key]
        assert set(got) == {"heuristic", "big", "small", "fast", "crashes", "wrong"}
        assert "died" in got["crashes"].error and got["fast"].us == 3.0
        pick = choose(p, got)
        assert pick.best.config == "fast" and pick.rejected == 2  # crashes, wrong
        assert pick.entry["heuristic_us"] == 8.0 and pick.entry["candidates"] == 5
    assert sum("ended the process" in s for s in said) == 4  # once per problem
    # resumable: the journal holds everything, a second run starts no process
    os.remove(tmp_path / "stdin.log")
    again = measure(harness, problems(), Journal.load(str(tmp_path / "journal.jsonl")), None, said.append)
    assert not (tmp_path / "stdin.log").exists()
    assert {k: set(v) for k, v in again.items()} == {k: set(v) for k, v in results.items()}


def test_a_harness_that_cannot_start_is_a_clear_error(tmp_path):
    harness = Harness("gemm_x", str(tmp_path), (), "missing", "d", CONFIGS)
    with pytest.raises(AitError, match="cannot run the harness"):
        measure(harness, problems(), Journal(str(tmp_path / "j.jsonl")), None, print)


def test_winners_merge_into_the_profile_file(tmp_path):
    harness = fake_harness(tmp_path)
    results = measure(harness, problems(), Journal(str(tmp_path / "j.jsonl")), None, print)
    path = str(tmp_path / "profiles" / "h200.yaml")
    entries = {("gemm float16 other", "n=1 k=1 l=1", 1): {
        "family": "gemm float16 other", "problem": "n=1 k=1 l=1", "extent": 1, "config": "big",
        "us": 1.0, "candidates": 2}}
    for p in problems():
        entries[p.key] = choose(p, results[p.key]).entry
    write_profile(path, "h200", "Fake GPU (4 SMs)", entries)
    text = open(path).read()
    assert text.count("\n  - {family: ") == 5 and "measured_on: \"Fake GPU (4 SMs)\"" in text
    assert read_entries(path) == (entries, "Fake GPU (4 SMs)")  # what is written reads back
    profile = Profile(path, read_profile(path))
    (first,) = [p for p in problems() if p.extent == 4 and dict(p.tunable.problem)["n"] == 64]
    assert [(e, c.name) for e, c in profile.choices(first.tunable)] == [(4, "fast"), (32, "fast")]


def test_dim_points_default_to_the_batch_range():
    from ait_build.ir.dims import DimRange
    dims = {"batch": DimRange("batch", 1, 256, 64), "seq": DimRange("seq", 8, 512, 128)}
    assert dim_points(dims, {}) == [{"batch": b, "seq": 128} for b in (1, 64, 256)]
    assert dim_points(dims, {"seq": [128, 512], "batch": [8]}) == [
        {"batch": 8, "seq": 128}, {"batch": 8, "seq": 512}]
    with pytest.raises(AitError, match="outside its range"):
        dim_points(dims, {"batch": [512]})
    with pytest.raises(AitError, match="no dim 'sq'"):
        dim_points(dims, {"sq": [1]})
    assert json.dumps(dim_points({}, {})) == "[{}]"


def test_a_hanging_candidate_is_killed_and_skipped(tmp_path, monkeypatch):
    import ait_build.profile.measure as measure_module
    monkeypatch.setattr(measure_module, "SILENCE_TIMEOUT_S", 2)
    harness = fake_harness(tmp_path)
    program = tmp_path / "harness"
    # 'crashes' hangs instead of exiting
    program.write_text(program.read_text().replace("sys.exit(7)", "import time; time.sleep(60)"))
    said = []
    results = measure(harness, problems()[:1], Journal(str(tmp_path / "j.jsonl")), None, said.append)
    (got,) = results.values()
    assert "no output for 2 s" in got["crashes"].error and got["fast"].us == 3.0
