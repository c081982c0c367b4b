"""`ait-build package`: a build folder as one artifact that loads where only the runtime is
installed (runtime/package.py)."""

from __future__ import annotations

import os

from ait_build.runtime.package import make_package

DESCRIPTION = ("Pack a build folder into an artifact that loads on a machine with only the "
               "runtime installed: the library, its header, manifest.json, the weights, the BLAS "
               "libraries it finds through its $ORIGIN rpath, their licences and SHA256SUMS. The "
               "folder is checked as loading checks it first.")
EXAMPLES = ["ait-build package build/cpu/mlp -o mlp.tar.gz",
            "ait-build package build/cpu/mlp -o dist/mlp   # a folder"]


def add_arguments(p) -> None:
    p.add_argument("build_dir", help="a build folder, e.g. build/cpu/mlp")
    p.add_argument("-o", "--output", metavar="OUT", help="a .tar.gz or .tgz file, else a new "
                   "folder (default: <model>-<target>.tar.gz)")


def default_output(build_dir: str) -> str:
    """<model>-<target>.tar.gz, from build/<target>/<model>."""
    folder = os.path.abspath(build_dir)
    return f"{os.path.basename(folder)}-{os.path.basename(os.path.dirname(folder))}.tar.gz"


def run(args) -> int:
    print(make_package(os.path.normpath(args.build_dir),
                       args.output or default_output(args.build_dir)))
    return 0
