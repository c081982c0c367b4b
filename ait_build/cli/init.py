"""`ait-build init`: a new project, with the files a user's repository needs."""

from __future__ import annotations

import os

from ait_build import __version__
from ait_build.backends.toolchain import NVCC_WHEELS
from ait_build.errors import AitError
from ait_build.files.output import create_new, link_problem
from ait_build.files.read import read_bytes
from ait_build.ir.resources import PACKAGE_DIR, data_dir

DESCRIPTION = ("Write the files a repository needs to build models with ait-build: a thin "
               "SConstruct, specs/ with one example, targets/ for your own target files, a "
               ".gitignore for build/, a GitHub Actions workflow (.github/workflows/ait-build.yml) "
               "and the requirements file it installs from (ci/requirements.txt, pinned to this "
               "ait-build). Existing files are kept.")
EXAMPLES = ["ait-build init demo && cd demo && scons target=cpu", "ait-build init   # here"]

PROJECT_FILES = os.path.join(PACKAGE_DIR, "project_files")
EXAMPLE_SPEC = "mlp.yaml"
# what init writes: path in the new project -> where its bytes come from
INIT_FILES = {
    "SConstruct": ("project_files", "SConstruct"),
    ".gitignore": ("project_files", "gitignore"),
    os.path.join("specs", EXAMPLE_SPEC): ("specs", EXAMPLE_SPEC),
    os.path.join("targets", "README.md"): ("project_files", "targets-README.md"),
    os.path.join(".github", "workflows", "ait-build.yml"): ("project_files", "ait-build.yml"),
    os.path.join("ci", "requirements.txt"): ("project_files", "ci-requirements.txt"),
}
# files whose {fields} init fills in (init_fields): the versions CI installs
FILLED = {os.path.join("ci", "requirements.txt")}

NEXT_STEPS = """
next, in {where}:
  scons target=cpu                                      # build every spec in specs/ for cpu
  ait-build run build/cpu/{model} --random-input --check     # run it, compare with the reference
  ait-build install-cutlass && scons target=h200        # where nvcc is installed
  ait-build targets                                     # the targets, stock and your own
"""


def init_fields() -> dict:
    """What the filled files name: this ait-build's version and the pinned nvcc wheels."""
    return {"version": __version__, "nvcc_wheels": "\n".join(NVCC_WHEELS)}


def init_source(origin: str, name: str) -> str:
    return os.path.join(PROJECT_FILES if origin == "project_files" else data_dir(origin), name)


def init_project(directory: str) -> list:
    """Writes the files of a new project into `directory` (made if missing); files that exist
    are kept as they are. A link where a file would go (a dangling one would be followed out of
    the project) or a folder leading outside it refuses the whole init, before anything is
    written. Returns (path, 'wrote' | 'kept') pairs."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise AitError(f"'{directory}' exists and is not a folder")
    real = os.path.realpath(directory)
    if os.path.dirname(real) == real:  # '/', or a drive's root: a project's files across the system
        raise AitError(f"'{directory}' is the root of the file system; give a project folder "
                       f"(ait-build init NAME)")
    todo = []
    for rel in INIT_FILES:
        path = os.path.join(directory, rel)
        if not os.path.exists(path):  # a file, or a link to one, is kept: nothing is written
            problem = link_problem(path, directory)
            if problem:
                raise AitError(f"{problem}; ait-build init wrote nothing")
        todo.append((rel, path))
    done = []
    for rel, path in todo:
        if os.path.exists(path):
            done.append((rel, "kept"))
            continue
        data = read_bytes(init_source(*INIT_FILES[rel]))
        if rel in FILLED:
            data = data.decode("utf-8").format(**init_fields()).encode("utf-8")
        create_new(path, data, directory)
        done.append((rel, "wrote"))
    return done


def run(args) -> int:
    if not args.dir:
        raise AitError("give the project folder (or nothing for the working directory)")
    for rel, what in init_project(args.dir):
        print(f"{what} {os.path.join(args.dir, rel)}" + (" (exists)" if what == "kept" else ""))
    print(NEXT_STEPS.format(where=args.dir, model=os.path.splitext(EXAMPLE_SPEC)[0]).rstrip())
    return 0


def add_arguments(p) -> None:
    p.add_argument("dir", nargs="?", default=".", help="the project folder (default: the working "
                   "directory; made if missing), e.g. demo")
