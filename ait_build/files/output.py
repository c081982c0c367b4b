"""The files a command is told to write: `import -o`, `profile -o`, `run -o`, `reference -o` and
`--intermediates`, `graph -o`, `bench --json`, `targets --copy` and `init`.

- `check_output` runs before the work that fills the file: a folder, a missing folder, an
  unwritable path or one of the command's own inputs is an error at once, not after minutes.
- `write_output` writes a regular file atomically: the bytes go to a temporary file beside it
  (with the mode the file has, or the umask's for a new one: mkstemp's 0600 would hide a spec
  from a CI account) that then replaces it. A device or a FIFO (`-o /dev/null`) is written in
  place, never replaced by a regular file (as root, that would replace /dev/null for the whole
  machine), or refused where the command must read its output back.
- `create_new` makes a file that must not exist yet, inside a project folder: never over an
  existing file, never through a link (a dangling one included), never in a folder that
  resolves outside the project (`init` in a cloned repository that planted such links).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from ait_build.errors import AitError
from ait_build.files.read import kind_of


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _special(path: str) -> int:
    """The mode of an existing file that is not a regular one or a folder, else 0."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return 0
    return 0 if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else mode


def check_output(path: str, inputs=(), devices: bool = True, make_folder: bool = False) -> None:
    """`path` can be written by a command reading `inputs`: not a folder, not one of the inputs,
    in a folder that exists (or, with `make_folder`, is made now) where a file can be made (tried:
    root passes every permission check, not a read-only mount). A device or FIFO is taken
    (written in place) with `devices`, else refused."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        raise AitError(f"{path}: is a directory; give a file name")
    special = _special(real)
    if special and not devices:
        raise AitError(f"{path}: not a regular file ({kind_of(special)}); give a file name")
    for given in inputs:
        if given and os.path.exists(given) and os.path.exists(real) and os.path.samefile(real, given):
            raise AitError(f"{path}: is the input {given}; writing it would destroy it")
    if special:
        if not os.access(real, os.W_OK):
            raise AitError(f"cannot write {path}: not writable")
        return
    folder = os.path.dirname(real)
    try:
        if make_folder:
            os.makedirs(folder, exist_ok=True)
        elif not os.path.isdir(folder):
            raise AitError(f"cannot write {path}: folder {folder} does not exist")
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise AitError(f"cannot write {path}: {exc.strerror or exc} ({folder})") from None
    if os.path.exists(real) and not os.access(real, os.W_OK):
        raise AitError(f"cannot write {path}: not writable")


class Staged:
    """A file written under a temporary name beside `path`, with the mode `path` has (or a new
    file's), moved over it by commit(); removed if the block ends without a commit."""

    def __init__(self, path: str):
        self.path = os.path.realpath(path)
        folder = os.path.dirname(self.path)
        os.makedirs(folder, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(self.path)}.",
                                        suffix=".part")
        os.close(fd)
        try:
            self.mode = stat.S_IMODE(os.stat(self.path).st_mode)
        except OSError:
            self.mode = 0o666 & ~current_umask()

    def commit(self) -> None:
        # the mode is set last: a writer such as safetensors' save_file replaces the file it is
        # given with one of its own, mode 0600
        os.chmod(self.tmp, self.mode)
        os.replace(self.tmp, self.path)
        self.tmp = None

    def __enter__(self) -> "Staged":
        return self

    def __exit__(self, *exc) -> None:
        if self.tmp and os.path.exists(self.tmp):
            os.unlink(self.tmp)


def write_output(path: str, data: bytes, devices: bool = True) -> None:
    """Writes `data` to `path`: atomically for a regular file, in place for a device or FIFO
    (see the module)."""
    with output_file(path, devices) as fh:
        fh.write(data)


@contextlib.contextmanager
def output_file(path: str, devices: bool = True):
    """`path` open for writing in binary, for a writer that streams (an archive): as
    write_output writes, the file in place only when the block ends without an error."""
    real = os.path.realpath(path)
    try:
        if _special(real):
            if not devices:
                raise AitError(f"{path}: not a regular file; give a file name")
            with open(real, "wb") as fh:
                yield fh
            return
        with Staged(path) as staged:
            with open(staged.tmp, "wb") as fh:
                yield fh
            staged.commit()
    except OSError as exc:
        raise AitError(f"cannot write {path}: {exc.strerror or exc}") from None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def link_problem(path: str, root: str) -> str:
    """Why `path` (not there yet) may not be created inside `root`, or '': it is a link (a
    dangling one would be followed out), or a folder on its way is a link leading outside the
    project or is not a folder."""
    if os.path.islink(path):
        return f"{path} is a link to {os.readlink(path)}; remove it (no file is written through one)"
    folder = os.path.dirname(path)
    while not os.path.lexists(folder) and os.path.abspath(folder) != os.path.abspath(root):
        folder = os.path.dirname(folder)
    if not os.path.lexists(folder):
        return ""  # the project folder itself is new
    if os.path.islink(folder) and not os.path.exists(folder):
        return f"{folder} is a link to {os.readlink(folder)}, which does not exist; remove it"
    if not os.path.isdir(folder):
        return f"{folder} is not a folder"
    if not _inside(os.path.realpath(folder), os.path.realpath(root)):
        return (f"{folder} leads outside the project (to {os.path.realpath(folder)}); no file is "
                "written through a link")
    return ""


def create_new(path: str, data: bytes, root: str) -> None:
    """A new file at `path` inside the project folder `root` (see link_problem), with the
    umask's mode; AitError if it cannot be made there."""
    problem = link_problem(path, root)
    if problem:
        raise AitError(problem)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o666)
    except FileExistsError:
        raise AitError(f"{path} exists") from None
    except OSError as exc:
        raise AitError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        os.unlink(path)
        raise AitError(f"cannot write {path}: {exc.strerror}") from None
