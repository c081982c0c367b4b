"""Profile journals and profile files are read as a spec is: an impossible time (negative, NaN,
a string) is an error at its file:line, never a winner written into profiles/<target>.yaml; an
entry naming a configuration its family lacks is reported by the build, not dropped silently."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ait_build.errors import SpecError
from ait_build.pipeline import build_plan, find_target
from ait_build.profile.journal import Journal, Result
from ait_build.spec.profile import read_entries, read_profile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = {"digest": "d1", "key": ["gemm float16 x", "n=64 k=64 l=1", 4],
        "result": {"config": "big", "us": 9.0, "rel_err": 1e-4}}


def _journal(tmp_path, *rows, tail: str = "\n") -> str:
    path = str(tmp_path / "journal.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + tail)
    return path


def _with(**result) -> dict:
    return dict(GOOD, result=dict(GOOD["result"], **result))


@pytest.mark.parametrize("row, words", [
    (_with(us=-100.0), "result.us must be a finite positive number, got -100.0"),
    (_with(us=0), "result.us must be a finite positive number, got 0"),
    ('{"digest": "d1", "key": ["f", "p", 4], "result": {"config": "big", "us": NaN}}',
     "got nan"),
    (_with(us="fast"), "got 'fast'"),
    (_with(us=True), "got True"),
    (_with(rel_err=float("inf")), "result.rel_err must be a finite non-negative number"),
    (_with(speed=1.0), "result must be an object with config and only"),
    (dict(GOOD, key=["f", "p", -1]), "key [family, problem, extent]"),
    ("not json", "not a JSON line"),
])
def test_impossible_journal_lines_are_located_errors(tmp_path, row, words):
    path = _journal(tmp_path, GOOD, row, GOOD)
    with pytest.raises(SpecError) as err:
        Journal.load(path)
    assert str(err.value).startswith(f"{path}:2:1: error: ")
    assert words in str(err.value) and "--fresh" in str(err.value)


def test_a_line_cut_short_is_skipped_and_the_next_write_removes_it(tmp_path):
    path = _journal(tmp_path, GOOD, '{"digest": "d1", "key": ["gemm', tail="")
    journal = Journal.load(path)
    assert list(journal.results("d1", ("gemm float16 x", "n=64 k=64 l=1", 4))) == ["big"]
    journal.add("d1", ("f", "p", 8), Result("small", 7.0, 1e-4))
    journal.add("d1", ("f", "p", 8), Result("big", 9.0, 1e-4))
    again = Journal.load(path)
    assert sorted(again.results("d1", ("f", "p", 8))) == ["big", "small"]
    assert len(open(path).read().splitlines()) == 3


def test_a_journal_that_is_a_fifo_is_refused_not_read(tmp_path):
    path = str(tmp_path / "journal.jsonl")
    os.mkfifo(path)
    with pytest.raises(SpecError, match="not a regular file"):
        Journal.load(path)


PROFILE = """apiVersion: ait-build/v1
kind: Profile
target: h200
measured_on: "Fake GPU"
entries:
  - {{family: "gemm float16 x", problem: "n=64", extent: 4, config: big, {fields}}}
"""


@pytest.mark.parametrize("fields, words", [
    ("us: -100.0", "entries[0].us must be a positive number, got -100.0"),
    ("us: .nan", "entries[0].us must be a positive number, got nan"),
    ("us: fast", "'us' in entries[0] must be a number, got a string"),
    ("heuristic_us: -1", "entries[0].heuristic_us must be a positive number"),
    ("candidates: 0", "entries[0].candidates must be a positive number, got 0"),
])
def test_impossible_profile_entries_are_located_errors(tmp_path, fields, words):
    path = tmp_path / "h200.yaml"
    path.write_text(PROFILE.format(fields=fields))
    for read in (read_profile, read_entries):  # as a build reads it, and as profile merges
        with pytest.raises(SpecError) as err:
            read(str(path))
        assert str(err.value).startswith(f"{path}:6:") and words in str(err.value), err.value


def test_an_entry_naming_a_configuration_its_family_lacks_is_reported(tmp_path):
    """The build says which entry it could not use, at its line, and what it uses instead."""
    os.makedirs(tmp_path / "targets")
    shutil.copy(os.path.join(ROOT, "targets", "h200.yaml"), tmp_path / "targets")
    os.makedirs(tmp_path / "profiles")
    profile = tmp_path / "profiles" / "h200.yaml"
    profile.write_text(PROFILE.replace("gemm float16 x", "gemm float32 b=col act=gelu align=4,4,4")
                       .replace("n=64", "n=64 k=32 l=1").replace("config: big",
                                                                "config: sm80_64x64x16_w32x32x16_s5")
                       .format(fields="us: 3.0"))
    target = find_target("h200", str(tmp_path / "targets"))
    summary = build_plan(os.path.join(ROOT, "specs", "mlp.yaml"), target).tuning.summary()
    first = summary.splitlines()[0]
    assert first.startswith(f"{profile}:6:5: warning: the entry for gemm float32 b=col act=gelu "
                            "align=4,4,4 n=64 k=32 l=1 (extent 4) names configuration "
                            "'sm80_64x64x16_w32x32x16_s5', which this family does not have")
    assert "did you mean 'sm80_64x64x16_w32x32x16_s4'" in first
    assert "2 of 2 GEMM/conv calls have no entry" in summary
