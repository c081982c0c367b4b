"""Errors that point at a place in a spec file, printed as `PATH:LINE:COL: error: MESSAGE`."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Location:
    """A 1-based position in a spec file (line 0: the file as a whole)."""

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.path
        return f"{self.path}:{self.line}:{self.col}"


class AitError(Exception):
    """Base of every error the tool reports to a user (the CLI prints these without a traceback)."""


class SpecError(AitError):
    """A problem in a user's spec, with the place it comes from when one is known. Notes add
    context lines, each with its own place (e.g. the block use that expanded a bad node)."""

    def __init__(self, message: str, loc: Location | None = None, note: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.notes: list = [(loc, note)] if note else []

    def add_note(self, note: str, loc: Location | None = None) -> None:
        self.notes.append((loc, note))

    def __str__(self) -> str:
        lines = [f"{_prefix(self.loc)}error: {self.message}"]
        lines += [f"{_prefix(loc)}note: {note}" for loc, note in self.notes]
        return "\n".join(lines)


def _prefix(loc: Location | None) -> str:
    return f"{loc}: " if loc is not None else ""


class ReportedError(AitError):
    """An error whose text is already as the CLI prints it (`error: ...` or a located error),
    relayed from a subprocess such as SCons."""


class OpError(AitError):
    """Raised by op shape inference; the graph builder adds the node's location."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest choice, or ''."""
    close = difflib.get_close_matches(str(word), sorted({str(c) for c in choices}), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def format_error(exc: BaseException) -> str:
    """How the CLI prints an AitError: located errors as they are, others as 'error: ...'."""
    text = str(exc)
    return text if isinstance(exc, (SpecError, ReportedError)) else f"error: {text}"


def shown(value, limit: int = 60) -> str:
    """repr(value) cut to `limit` characters, so a message never quotes a huge value."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
