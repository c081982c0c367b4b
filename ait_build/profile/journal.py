"""The profiler's journal (build/<target>/profile/journal.jsonl): one JSON line per measured
(problem, configuration), keyed by the harness's source digest, so an interrupted profile
resumes where it stopped.

Its lines are read as a spec is: a time that is negative, zero, NaN or not a number, or a field
that does not belong, is an error at `journal.jsonl:LINE:COL` (a -100 us line would otherwise
win, and be written into the target's profile). Only a last line without its newline, which
an interrupted write leaves, is skipped (and the next write removes it).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

from ait_build.errors import Location, SpecError
from ait_build.files.read import read_bytes

RESULT_FIELDS = ("config", "us", "rel_err", "error")


@dataclass
class Result:
    config: str
    us: float | None = None
    rel_err: float | None = None
    error: str = ""

    def valid(self, tolerance: float) -> bool:
        return self.us is not None and not self.error and self.rel_err is not None \
            and self.rel_err <= tolerance

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass
class Journal:
    path: str
    seen: dict = field(default_factory=dict)  # (digest, key) -> {config: Result}
    tail_checked: bool = False  # whether add() has looked for a line cut short

    @staticmethod
    def load(path: str) -> "Journal":
        journal = Journal(path)
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            return journal
        except OSError as exc:
            raise SpecError(f"cannot read the profile journal: {exc.strerror}", Location(path)) \
                from None
        lines = data.split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                if number == len(lines):  # no newline after it: a write cut short
                    continue
                raise _error(path, number, f"not a JSON line ({exc})") from None
            key, result = _checked_row(row, path, number)
            journal.seen.setdefault(key, {})[result.config] = result
        return journal

    def add(self, digest: str, key: tuple, result: Result) -> None:
        self.seen.setdefault((digest, key), {})[result.config] = result
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        if not self.tail_checked:
            self._drop_cut_line()
        line = json.dumps({"digest": digest, "key": list(key), "result": result.to_json()},
                          allow_nan=False)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def _drop_cut_line(self) -> None:
        """Removes a last line an interrupted write left without its newline: appending after
        it would make it a broken line in the middle of the file."""
        self.tail_checked = True
        try:
            with open(self.path, "r+b") as fh:
                data = fh.read()
                if data and not data.endswith(b"\n"):
                    fh.truncate(data.rfind(b"\n") + 1)
        except FileNotFoundError:
            pass

    def results(self, digest: str, key: tuple) -> dict:
        return self.seen.get((digest, key), {})


def _error(path: str, line: int, message: str) -> SpecError:
    return SpecError(f"{message}; `ait-build profile --fresh` measures again",
                     Location(path, line, 1))


def _checked_row(row, path: str, line: int) -> tuple:
    """((digest, key), Result) of one journal line, or a located error."""
    if not isinstance(row, dict) or sorted(row) != ["digest", "key", "result"]:
        raise _error(path, line, "a journal line is an object with digest, key and result")
    digest, key, raw = row["digest"], row["key"], row["result"]
    if not (isinstance(digest, str) and isinstance(key, list) and len(key) == 3
            and all(isinstance(k, str) for k in key[:2]) and _count(key[2])):
        raise _error(path, line, "digest must be a string and key [family, problem, extent]")
    if not isinstance(raw, dict) or not isinstance(raw.get("config"), str) \
            or set(raw) - set(RESULT_FIELDS):
        raise _error(path, line, f"result must be an object with config and only "
                                 f"{', '.join(RESULT_FIELDS)}")
    for name, low in (("us", 0.0), ("rel_err", -1.0)):
        value = raw.get(name)
        if value is not None and not (_number(value) and value > low):
            raise _error(path, line, f"result.{name} must be a finite "
                                     f"{'positive' if low == 0 else 'non-negative'} number, "
                                     f"got {value!r}")
    if not isinstance(raw.get("error", ""), str):
        raise _error(path, line, "result.error must be a string")
    return (digest, tuple(key)), Result(**raw)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
