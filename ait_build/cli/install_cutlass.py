"""`ait-build install-cutlass`: the CUTLASS headers cuda builds read, without the dependencies of
the wheel's Python package (docs/install.md)."""

from __future__ import annotations

import shlex
import subprocess
import sys

from ait_build.backends.cuda.toolchain import CUTLASS_WHEEL

DESCRIPTION = ("pip install the nvidia-cutlass wheel that ait-build's cuda targets are built and "
               "checked with, without its dependencies: the headers are all a build reads, and "
               "the wheel's Python package pulls scipy, cuda-python and more that ait-build never "
               "imports. CUTLASS_PATH=<a CUTLASS checkout> is the other route.")
EXAMPLES = ["ait-build install-cutlass", "ait-build install-cutlass --dry-run   # print the pip "
            "command"]


def add_arguments(p) -> None:
    p.add_argument("--dry-run", action="store_true", help="print the pip command, run nothing")


def install_command() -> list:
    return [sys.executable, "-m", "pip", "install", "--no-deps", CUTLASS_WHEEL]


def run(args) -> int:
    command = install_command()
    print(shlex.join(command), flush=True)
    if args.dry_run:
        return 0
    return subprocess.run(command, check=False).returncode
