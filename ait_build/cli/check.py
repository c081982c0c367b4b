"""`ait-build check`: validate model, target, blocks and profile files."""

from __future__ import annotations

import glob
import os
import sys

from ait_build.errors import AitError, format_error
from ait_build.ir.resources import project_root
from ait_build.pipeline import check_file

DESCRIPTION = ("Validate model, target, blocks and profile files (each by its `kind`); errors "
               "point at PATH:LINE:COL. Without files: every YAML file of the project's specs/ "
               "(its subfolders too), targets/ and profiles/.")
EXAMPLES = ["ait-build check", "ait-build check specs/mlp.yaml targets/h200.yaml"]


def add_arguments(p) -> None:
    p.add_argument("specs", nargs="*", metavar="SPEC", help="spec files, e.g. specs/mlp.yaml "
                   "(default: the project's specs/, targets/ and profiles/)")


def project_spec_files() -> list:
    """The project's specs/ (blocks files in its subfolders too), targets/ and profiles/,
    relative to the working directory."""
    root = project_root()
    found = sorted(glob.glob(os.path.join(root, "specs", "**", "*.yaml"), recursive=True))
    for folder in ("targets", "profiles"):
        found += sorted(glob.glob(os.path.join(root, folder, "*.yaml")))
    if not found:
        raise AitError(f"no spec files given, and {os.path.join(root, 'specs')} has none")
    return [os.path.relpath(p) for p in found]


def run(args) -> int:
    """Check every file (a model, target, blocks or profile file, by its `kind`); exit 1 if any
    fails."""
    failed = 0
    for path in args.specs or project_spec_files():
        try:
            print(f"{path}: {check_file(path)}")
        except AitError as exc:
            print(format_error(exc), file=sys.stderr)
            failed += 1
    return 1 if failed else 0
