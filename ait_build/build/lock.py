"""One build at a time per checkout: two SCons runs writing the same build/ folder would
interleave their outputs (a linker reading an object the other run is rewriting)."""

from __future__ import annotations

import fcntl
import os
import stat
import sys

from ait_build.errors import AitError
from ait_build.files.read import NotRegularFile

_HELD: list = []  # the open lock file, kept for the life of the process


def hold_build_lock(build_dir: str) -> None:
    """Takes build/.lock for this process, waiting (and saying so) while another build holds it.
    The kernel drops the lock when the holder exits, however it ends, so none is ever stale."""
    if _HELD:
        return
    path = os.path.join(build_dir, ".lock")
    try:
        os.makedirs(build_dir, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO: reads would block (files/read.py)
            os.close(fd)
            raise NotRegularFile(0, "not a regular file", path)
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "a+", encoding="ascii")
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
