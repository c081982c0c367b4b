"""`ait-build check`: validate model, target and blocks files."""

from __future__ import annotations

import sys

from ait_build.errors import AitError, format_error
from ait_build.pipeline import check_file

DESCRIPTION = ("Validate model, target and blocks files (each by its `kind`); errors point at "
               "PATH:LINE:COL.")
EXAMPLES = ["ait-build check specs/*.yaml targets/h200.yaml"]


def add_arguments(p) -> None:
    p.add_argument("specs", nargs="+", metavar="SPEC", help="spec files, e.g. specs/mlp.yaml")


def run(args) -> int:
    """Check every file (a model, target or blocks file, by its `kind`); exit 1 if any fails."""
    failed = 0
    for path in args.specs:
        try:
            print(f"{path}: {check_file(path)}")
        except AitError as exc:
            print(format_error(exc), file=sys.stderr)
            failed += 1
    return 1 if failed else 0
