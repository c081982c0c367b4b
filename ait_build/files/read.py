"""Every file ait-build reads (specs, targets, profiles, journals, weights, build folders, cache
entries) is opened here: non-blocking, then checked with fstat on the open descriptor, and read
only when it is a regular file.

Opening a FIFO for reading waits for a writer, forever where someone replaced a cache entry or
a build output with one, and a device can stream without end. O_NONBLOCK makes the open itself
return at once; fstat on the descriptor (not on the path) leaves no gap between the check and
the read. Paths a library opens itself (safetensors, dlopen, the ONNX loader, SCons copying a
cache entry) go through `check_regular` first.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat

KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
         (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISSOCK, "a socket"))


class NotRegularFile(OSError):
    """The path names a directory, a FIFO, a device or a socket, not a file's bytes."""


def kind_of(mode: int) -> str:
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def open_regular(path: str, encoding: str | None = None):
    """`path` opened for reading (binary, or text in `encoding`); NotRegularFile (an OSError)
    unless it is a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
                                 f"not a regular file ({kind_of(mode)})", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "r" if encoding else "rb", encoding=encoding)
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most `limit` + 1 of them, so a caller can tell a file
    over its limit)."""
    with open_regular(path) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def read_text(path: str, encoding: str = "utf-8") -> str:
    with open_regular(path, encoding) as fh:
        return fh.read()


def check_regular(path: str) -> os.stat_result:
    """The stat of `path` when it is a regular file, for a library that opens it itself."""
    with open_regular(path) as fh:
        return os.fstat(fh.fileno())


def sha256_file(path: str) -> str:
    """Hex SHA-256 of a regular file's bytes, read in chunks (weights files are large)."""
    digest = hashlib.sha256()
    with open_regular(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


# NumPy's own files, often given where a safetensors file is asked for: .npy, and .npz (a zip)
NUMPY_MAGIC = ((b"\x93NUMPY", ".npy"), (b"PK\x03\x04", ".npz"))


def numpy_file(path: str) -> str | None:
    """'.npy' or '.npz' where the file is NumPy's, else None (also where it cannot be read)."""
    try:
        with open_regular(path) as fh:
            head = fh.read(6)
    except OSError:
        return None
    return next((kind for magic, kind in NUMPY_MAGIC if head.startswith(magic)), None)


def not_safetensors(path: str, what: str, names: str, out: str) -> str:
    """The message for a NumPy file given as `what` (a safetensors file of tensors named as
    `names`), with the line that converts it to `out`; '' where it is not NumPy's."""
    kind = numpy_file(path)
    if kind is None:
        return ""
    arrays = "{'NAME': np.load(FILE)}" if kind == ".npy" else "dict(np.load(FILE))"
    return (f"{path}: a NumPy {kind} file, not safetensors; {what} takes a safetensors file "
            f"whose tensors are named as {names}: safetensors.numpy.save_file({arrays}, "
            f"'{out}')")
