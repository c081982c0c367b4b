"""Errors that point at a place in a spec file, printed as `PATH:LINE:COL: error: MESSAGE`."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Location:
    """A 1-based position in a spec file."""

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.path
        return f"{self.path}:{self.line}:{self.col}"


UNKNOWN = Location("<unknown>")


class AitError(Exception):
    """Base of every error the tool reports to a user (the CLI prints these without a traceback)."""


class SpecError(AitError):
    """A problem in a user's spec, with the place it comes from."""

    def __init__(self, message: str, loc: Location | None = None, note: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc or UNKNOWN
        self.note = note

    def __str__(self) -> str:
        text = f"{self.loc}: error: {self.message}"
        if self.note:
            text += f"\n{self.loc}: note: {self.note}"
        return text


class OpError(AitError):
    """Raised by op shape inference; the graph builder adds the node's location."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest choice, or ''."""
    close = difflib.get_close_matches(str(word), sorted(set(choices)), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
