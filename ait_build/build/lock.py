"""One build at a time per checkout: two SCons runs writing the same build/ folder would
interleave their outputs (a linker reading an object the other run is rewriting)."""

from __future__ import annotations

import fcntl
import os
import sys

from ait_build.errors import AitError

_HELD: list = []  # the open lock file, kept for the life of the process


def hold_build_lock(build_dir: str) -> None:
    """Takes build/.lock for this process, waiting (and saying so) while another build holds it.
    The kernel drops the lock when the holder exits, however it ends, so none is ever stale."""
    if _HELD:
        return
    path = os.path.join(build_dir, ".lock")
    try:
        os.makedirs(build_dir, exist_ok=True)
        fh = open(path, "a+", encoding="ascii")
    except OSError as exc:
        raise AitError(f"cannot write {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "another process"
        print(f"ait-build: waiting for the build running in this checkout ({holder}) to finish",
              file=sys.stderr, flush=True)
        fcntl.flock(fh, fcntl.LOCK_EX)
    fh.seek(0)
    fh.truncate()
    fh.write(f"pid {os.getpid()}\n")
    fh.flush()
    _HELD.append(fh)
