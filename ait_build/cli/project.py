"""`ait-build init` (a new project: the files a user's repository needs) and `ait-build targets`
(the targets a project can build for, and where each comes from)."""

from __future__ import annotations

import os
import shutil
import sys

from ait_build.errors import AitError
from ait_build.ir.resources import PACKAGE_DIR, data_dir, project_targets

PROJECT_FILES = os.path.join(PACKAGE_DIR, "project_files")
EXAMPLE_SPEC = "mlp.yaml"
# what init writes: path in the new project -> where its bytes come from
INIT_FILES = {
    "SConstruct": ("project_files", "SConstruct"),
    ".gitignore": ("project_files", "gitignore"),
    os.path.join("specs", EXAMPLE_SPEC): ("specs", EXAMPLE_SPEC),
    os.path.join("targets", "README.md"): ("project_files", "targets-README.md"),
    os.path.join(".github", "workflows", "ait-build.yml"): ("project_files", "ait-build.yml"),
}

NEXT_STEPS = """
next, in {where}:
  scons target=cpu                                      # build every spec in specs/ for cpu
  ait-build run build/cpu/{model} --random-input --check     # run it, compare with the reference
  scons target=h200                                     # where nvcc and nvidia-cutlass are installed
  ait-build targets                                     # the targets, stock and your own
"""


def init_source(origin: str, name: str) -> str:
    return os.path.join(PROJECT_FILES if origin == "project_files" else data_dir(origin), name)


def init_project(directory: str) -> list:
    """Writes the files of a new project into `directory` (made if missing); files that exist
    are kept as they are. Returns (path, 'wrote' | 'kept') pairs."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise AitError(f"'{directory}' exists and is not a folder")
    done = []
    for rel, (origin, name) in INIT_FILES.items():
        path = os.path.join(directory, rel)
        if os.path.exists(path):
            done.append((rel, "kept"))
            continue
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(init_source(origin, name), path)
        except OSError as exc:
            raise AitError(f"cannot write {path}: {exc.strerror}") from None
        done.append((rel, "wrote"))
    return done


def cmd_init(args) -> int:
    for rel, what in init_project(args.dir):
        print(f"{what} {os.path.join(args.dir, rel)}" + (" (exists)" if what == "kept" else ""))
    print(NEXT_STEPS.format(where=args.dir, model=os.path.splitext(EXAMPLE_SPEC)[0]).rstrip())
    return 0


def cmd_targets(args) -> int:
    from ait_build.spec.target import find_target, load_target, target_files
    files = target_files()
    if args.copy:
        return copy_stock_target(args.copy)
    if args.show:
        find_target(args.show)  # an unknown name: the error lists the known ones
        with open(files[args.show][0], encoding="utf-8") as fh:
            sys.stdout.write(fh.read())
        return 0
    rows = [("name", "backend", "arch", "from", "file")]
    for name, (path, origin) in files.items():
        target = load_target(path)
        rows.append((name, target.backend, target.arch or "-", origin, os.path.relpath(path)
                     if origin == "project" else path))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])
    print(f"\nproject targets ({project_targets()}) override stock ones of the same name")
    return 0


def copy_stock_target(name: str) -> int:
    """Copies ait-build's stock target `name` into the project's targets/, to edit there."""
    from ait_build.spec.target import find_target, stock_targets_dir
    source = os.path.join(stock_targets_dir(), name + ".yaml")
    if not os.path.isfile(source):
        find_target(name)  # a project-only or unknown name: the error lists the known ones
        raise AitError(f"'{name}' is not a stock target; --copy starts from a stock one")
    dest = os.path.join(project_targets(), name + ".yaml")
    if os.path.exists(dest):
        raise AitError(f"{dest} exists; edit it there")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copyfile(source, dest)
    print(f"wrote {os.path.relpath(dest)}: it now overrides the stock '{name}'")
    return 0


def register(sub) -> None:
    from ait_build.cli.main import add_command
    p = add_command(
        sub, "init", "write a new project: SConstruct, specs/, targets/, .gitignore, CI workflow",
        "Write the files a repository needs to build models with ait-build: a thin SConstruct, "
        "specs/ with one example, targets/ for your own target files, a .gitignore for build/ "
        "and a GitHub Actions workflow (.github/workflows/ait-build.yml). Existing files are "
        "kept.",
        ["ait-build init demo && cd demo && scons target=cpu", "ait-build init   # here"])
    p.add_argument("dir", nargs="?", default=".", help="the project folder (default: the working "
                   "directory; made if missing), e.g. demo")
    p.set_defaults(func=cmd_init)

    p = add_command(
        sub, "targets", "list the targets this project can build for",
        "List every target: ait-build's stock ones and the files in the project's targets/ "
        "(the project around the working directory), which override a stock target of the same "
        "name or add new ones.",
        ["ait-build targets", "ait-build targets --show h200",
         "ait-build targets --copy h200   # then edit targets/h200.yaml"])
    group = p.add_mutually_exclusive_group()
    group.add_argument("--show", metavar="NAME", help="print the file the name resolves to, "
                       "e.g. --show h200")
    group.add_argument("--copy", metavar="NAME", help="copy a stock target into the project's "
                       "targets/ to edit it there, e.g. --copy h200")
    p.set_defaults(func=cmd_targets)
