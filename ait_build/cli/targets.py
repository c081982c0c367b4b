"""`ait-build targets`: the targets a project can build for, and where each comes from."""

from __future__ import annotations

import os
import sys

from ait_build.errors import AitError
from ait_build.files.output import create_new
from ait_build.files.read import read_bytes, read_text
from ait_build.ir.resources import project_root, project_targets
from ait_build.pipeline import find_target, load_target
from ait_build.spec.target import stock_targets_dir, target_files

DESCRIPTION = ("List every target: ait-build's stock ones and the files in the project's targets/ "
               "(the project around the working directory), which override a stock target of the "
               "same name or add new ones.")
EXAMPLES = ["ait-build targets", "ait-build targets --show h200",
            "ait-build targets --copy h200   # then edit targets/h200.yaml"]


def add_arguments(p) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--show", metavar="NAME", help="print the file the name resolves to, "
                       "e.g. --show h200")
    group.add_argument("--copy", metavar="NAME", help="copy a stock target into the project's "
                       "targets/ to edit it there, e.g. --copy h200")


def run(args) -> int:
    files = target_files()
    if args.copy:
        return copy_stock_target(args.copy)
    if args.show == "":
        raise AitError("--show needs a target name or file")
    if args.show:  # a name or a path, as --target takes; an unknown name lists the known ones
        sys.stdout.write(read_text(find_target(args.show).source))
        return 0
    rows, broken = [("name", "backend", "arch", "from", "file")], []
    for name, (path, origin) in files.items():
        shown = os.path.relpath(path) if origin == "project" else path
        try:
            target = load_target(path)
        except AitError as exc:  # listed, with its error after the table: the others still are
            rows.append((name, "?", "?", origin, shown))
            broken.append(str(exc))
            continue
        rows.append((name, target.backend, target.arch or "-", origin, shown))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])
    print(f"\nproject targets ({project_targets()}) override stock ones of the same name")
    for error in broken:
        print(error, file=sys.stderr)
    return 1 if broken else 0


def copy_stock_target(name: str) -> int:
    """Copies ait-build's stock target `name` into the project's targets/, to edit there."""
    source = os.path.join(stock_targets_dir(), name + ".yaml")
    if not os.path.isfile(source):
        find_target(name)  # a project-only or unknown name: the error lists the known ones
        raise AitError(f"'{name}' is not a stock target; --copy starts from a stock one")
    dest = os.path.join(project_targets(), name + ".yaml")
    if os.path.lexists(dest):
        raise AitError(f"{dest} exists; edit it there")
    create_new(dest, read_bytes(source), project_root())
    print(f"wrote {os.path.relpath(dest)}: it now overrides the stock '{name}'")
    return 0
