"""One build, checked before it runs: manifest.json, lib<model>.so and weights.safetensors must
be the files one build wrote, else `Model()` raises ModelError instead of running on a mismatch.

- the manifest's `build_id` is the hash of its other fields (an edit to any of them shows;
  checked by load_manifest);
- `lib<model>.so.sha256`, written after the link, holds the library's hash: checked before the
  library is mapped, so a truncated library is an error, not a SIGBUS inside dlopen;
- the library's `build_id()` must return the manifest's (a manifest from another build would
  describe buffers the library does not have);
- the build's own weights file must have the size and SHA-256 the manifest records;
- the other shared libraries in the folder (the BLAS it carries, found through `$ORIGIN`) must
  hold every byte their ELF headers say they have: mapping a truncated one is a SIGBUS.
"""

from __future__ import annotations

import glob
import os
import stat
import struct

from ait_build.codegen.digest import read_digest, sha256_file
from ait_build.files.read import read_bytes
from ait_build.runtime.manifest import Manifest, ModelError


def check_library_file(library: str) -> None:
    """The library's bytes against the digest its build recorded."""
    digest_file = library + ".sha256"
    recorded = read_digest(digest_file)
    if recorded is None:
        raise ModelError(f"{digest_file} is missing or unreadable: the build of "
                         f"{os.path.basename(library)} did not finish; rebuild it")
    try:
        actual = sha256_file(library)
    except OSError as exc:
        raise ModelError(f"cannot read {library}: {exc.strerror or exc}") from None
    if actual != recorded:
        raise ModelError(f"{library} does not match the hash its build recorded (truncated, "
                         "corrupt or replaced); rebuild it")


ELF_MAGIC = b"\x7fELF"


def check_carried_libraries(build_dir: str, model_library: str) -> None:
    """Each shared library in the folder but the model's own (which check_library_file hashes)
    is whole: its ELF program headers' file ranges and its section table end inside the file."""
    own = os.path.basename(model_library)
    for path in sorted(glob.glob(os.path.join(build_dir, "lib*.so*"))):
        if os.path.basename(path) == own or path.endswith(".sha256") or not os.path.isfile(path):
            continue
        end, size = _elf_end(path), os.path.getsize(path)
        if end is None or end > size:
            raise ModelError(f"{path} is not a whole shared library ({size} bytes"
                             + (f", its headers need {end}" if end else ", no ELF header")
                             + "): it was truncated or replaced; build the model again, or copy "
                             "the build folder again")


def _elf_end(path: str) -> int | None:
    """The first byte past what a 64-bit little-endian ELF file's headers place in it (its
    program headers' file ranges, its section header table), or None where it is no such
    file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if len(head) < 64 or head[:4] != ELF_MAGIC or head[4] != 2 or head[5] != 1:
                return None
            phoff, shoff = struct.unpack_from("<QQ", head, 0x20)
            phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 0x36)
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
    except OSError:
        return None
    end = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
    if phentsize < 56 or len(table) < phentsize * phnum:
        return end  # the table itself runs past the file (or is not ELF64's)
    for i in range(phnum):  # Elf64_Phdr: p_offset at 8, p_filesz at 32
        offset, = struct.unpack_from("<Q", table, i * phentsize + 8)
        filesz, = struct.unpack_from("<Q", table, i * phentsize + 32)
        end = max(end, offset + filesz)
    return end


def check_library_build(library_id: str, manifest: Manifest, library: str) -> None:
    if library_id == manifest.build_id:
        return
    try:
        on_disk = manifest.build_id.encode() in read_bytes(library)
    except OSError:
        on_disk = False
    if on_disk:  # the file is this build's: the process holds an older copy of it
        raise ModelError(f"this process already runs an older {os.path.basename(library)} (build "
                         f"{library_id[:12]}), rewritten in place since; load the new build in a "
                         "new process")
    raise ModelError(f"{library} and manifest.json come from different builds (library "
                     f"{library_id[:12]}, manifest {manifest.build_id[:12]}); rebuild the model")


def check_weights_file(path: str, manifest: Manifest, own: bool) -> None:
    """A regular file of the size the build wrote; the build's own file also by its SHA-256
    (a weights file given by the caller only has to fit the layout, which the library checks)."""
    name = manifest.name
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ModelError(f"{name}: weights file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ModelError(f"{name}: weights file {path} is not a regular file")
    if info.st_size != manifest.weights_bytes:
        raise ModelError(f"{name}: weights file {path} has {info.st_size} bytes, the build wrote "
                         f"{manifest.weights_bytes} (truncated or from another build?)")
    if own:
        try:
            actual = sha256_file(path)
        except OSError as exc:
            raise ModelError(f"{name}: cannot read weights file {path}: {exc}") from None
        if actual != manifest.weights_sha256:
            raise ModelError(f"{name}: weights file {path} does not match the SHA-256 in "
                             "manifest.json (changed after the build); rebuild the model")
