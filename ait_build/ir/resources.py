"""Where ait-build's own files are (templates, stock targets, the files `ait-build init` writes)
and which folder is the user's project.

The repository keeps `templates/` and `targets/` at its top (the layout is fixed); the wheel
carries them as `ait_build/_data/templates` and `ait_build/_data/targets` (pyproject.toml maps
them). `data_dir` looks for the packaged copy first and falls back to the checkout beside the
package: an installed package must use the files of its own version, never a `templates/` that
happens to sit beside site-packages, while a checkout or an editable install has no packaged
copy, so the checkout's folder is the only one there is.
"""

from __future__ import annotations

import os

from ait_build.errors import AitError

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # ait_build/
DATA_FOLDERS = ("templates", "targets", "specs")  # specs: the example `ait-build init` copies


def data_dir(name: str) -> str:
    """The folder of ait-build's `templates`, (stock) `targets` or (example) `specs`."""
    if name not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {name!r}")
    packaged = os.path.join(PACKAGE_DIR, "_data", name)
    if os.path.isdir(packaged):
        return packaged
    checkout = os.path.join(os.path.dirname(PACKAGE_DIR), name)
    if os.path.isdir(checkout):
        return checkout
    raise AitError(f"ait-build's {name}/ folder is missing (looked in {packaged} and {checkout}); "
                   "reinstall ait-build")


def project_root(start: str | None = None) -> str:
    """The user's project: the nearest folder at or above `start` (the working directory) that
    holds an SConstruct, else `start` itself (its specs/, targets/ and build/ are used)."""
    start = os.path.abspath(start or os.getcwd())
    here = start
    while True:
        if os.path.isfile(os.path.join(here, "SConstruct")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return start
        here = parent


def project_spec(spec: str, root: str | None = None) -> str:
    """A spec a command names: a path (ends in .yaml/.yml or holds a separator) as given, else a
    model name, whose file is specs/<name>.yaml of the project at `root` (default: the one
    around the working directory)."""
    if spec.endswith((".yaml", ".yml")) or os.sep in spec:
        return spec
    return os.path.join(root or project_root(), "specs", spec + ".yaml")


def project_targets(start: str | None = None) -> str:
    """The project's `targets/` folder (it may not exist: stock targets serve then)."""
    return os.path.join(project_root(start), "targets")
