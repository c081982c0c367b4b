"""The `ait-build` command run inside the test's process, through main() as `python -m ait_build`
runs it: for checks of what a command prints and returns before any work, which need no process
of their own (a subprocess costs a Python start and the package's imports every time). A check
that a command cannot hang, crash or warn stays a subprocess."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess


def run_main(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    """main(args) in `cwd`, with its exit status (argparse's SystemExit too) and its output."""
    from ait_build.cli.main import main
    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            os.chdir(cwd or here)
            rc = main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help
            rc = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:
            os.chdir(here)
    return subprocess.CompletedProcess(list(args), rc, out.getvalue(), err.getvalue())
