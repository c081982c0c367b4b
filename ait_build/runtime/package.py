"""`ait-build package build/<target>/<model>`: the build folder as a self-contained artifact (a
.tar.gz or a folder) that loads on a machine with only the runtime installed.

It holds what the build folder holds but its sources and objects: lib<model>.so and its
.sha256, the header, manifest.json, weights.safetensors, the BLAS libraries the library finds
through its `$ORIGIN` rpath and their licences (build/runtime_files.py places them), and
SHA256SUMS over all of them. The folder is checked first as loading checks it (manifest against
its build_id, library against its recorded hash, weights against the manifest), so a package is
never made of a broken or mixed build. Archives are reproducible: sorted members, no times,
owners or modes other than 0644/0755.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile

from ait_build.build.runtime_files import place
from ait_build.codegen.digest import digest_line, sha256_file
from ait_build.errors import AitError
from ait_build.files.output import check_output, output_file
from ait_build.runtime.identity import (check_carried_libraries, check_library_file,
                                        check_weights_file)
from ait_build.runtime.manifest import load_manifest, weights_path

LEFT_OUT = ("src", "obj")  # the rendered sources and their objects: building, not running
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
# archives of other formats: an -o ending so is refused, not made a folder of that name
OTHER_ARCHIVES = (".zip", ".tar", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".7z")


def package_files(build_dir: str) -> list:
    """(relative path, absolute path) of the files a package of `build_dir` holds, sorted; the
    folder is checked to be one whole build first."""
    if not os.path.isdir(build_dir):
        raise AitError(f"{build_dir}: not a build folder (build/<target>/<model>)")
    manifest_path = os.path.join(build_dir, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise AitError(f"{build_dir} has no manifest.json: build the model first "
                       "(scons target=... model=...)")
    manifest = load_manifest(manifest_path)
    library = os.path.join(build_dir, f"lib{manifest.name}.so")
    check_library_file(library)
    check_carried_libraries(build_dir, library)
    check_weights_file(weights_path(build_dir, manifest), manifest, own=True)
    found = []
    for folder, dirs, files in os.walk(build_dir):
        rel_folder = os.path.relpath(folder, build_dir)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not (rel_folder == "." and d in LEFT_OUT))
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.startswith(".") or ".tmp" in name or not os.path.isfile(path):
                continue
            _inside(build_dir, path)
            found.append((os.path.normpath(os.path.join(rel_folder, name)), path))
    return sorted(found)


def _inside(build_dir: str, path: str) -> None:
    """A link in the folder may point into it (or at the target's shared runtime copies, which
    builds place as files); one that leads elsewhere would pack a file of this machine that
    the build never made."""
    real, top = os.path.realpath(path), os.path.realpath(build_dir)
    runtime = os.path.join(os.path.dirname(top), ".runtime")
    if os.path.commonpath([real, top]) != top and os.path.commonpath([real, runtime]) != runtime:
        raise AitError(f"{path} links to {real}, outside the build folder: not packed (remove "
                       "the link, or copy the file in if the package should carry it)")


def sha256sums(files: list) -> bytes:
    """SHA256SUMS of the package (`sha256sum -c SHA256SUMS` checks it)."""
    return "".join(digest_line(sha256_file(path), rel) for rel, path in files).encode()


def make_package(build_dir: str, output: str) -> str:
    """Writes the package of `build_dir` to `output`: an archive where it ends in .tar.gz or
    .tgz (its top folder is the model's name), else a folder (new or empty). Returns a line
    saying what was written."""
    other = next((s for s in OTHER_ARCHIVES if output.lower().endswith(s)), None)
    if other:
        raise AitError(f"{output}: a package is a .tar.gz or .tgz archive or a folder, not a "
                       f"{other} file")
    files = package_files(build_dir)
    out, top = os.path.realpath(output or "."), os.path.realpath(build_dir)
    packed = {os.path.realpath(path) for _, path in files}  # those: "would destroy it", below
    if os.path.commonpath([out, top]) == top and out not in packed:
        raise AitError(f"{output}: inside the build folder {build_dir}; every later package of "
                       "it would carry this one: write it elsewhere")
    sums = sha256sums(files)
    name = os.path.basename(os.path.normpath(build_dir))
    size = sum(os.path.getsize(path) for _, path in files)
    if output.endswith(ARCHIVE_SUFFIXES):
        _write_archive(files, sums, name, output)
        packed = os.path.getsize(output) if os.path.isfile(output) else 0  # a FIFO has none
        what = f"{output} ({packed / 1e6:.1f} MB; {size / 1e6:.1f} MB unpacked)"
    else:
        _write_folder(files, sums, output)
        what = f"{output}/ ({size / 1e6:.1f} MB)"
    return f"wrote {what}: {len(files)} files and SHA256SUMS"


def _write_folder(files: list, sums: bytes, folder: str) -> None:
    if os.path.exists(folder) and (not os.path.isdir(folder) or os.listdir(folder)):
        raise AitError(f"{folder} exists and is not an empty folder; give a new one")
    try:
        for rel, path in files:  # hard links where the filesystem allows: the files are final
            place(path, os.path.join(folder, rel))
        with open(os.path.join(folder, "SHA256SUMS"), "wb") as fh:
            fh.write(sums)
    except OSError as exc:
        raise AitError(f"cannot write {folder}: {exc.strerror or exc}") from None


def _write_archive(files: list, sums: bytes, top: str, output: str) -> None:
    """Through files/output.py: replaced atomically, or a FIFO or device (`-o /dev/null`)
    written in place; never one of the files it packs."""
    check_output(output, [path for _, path in files])
    with output_file(output) as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="",
                                                   compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, path in files:
            executable = os.stat(path).st_mode & stat.S_IXUSR
            with open(path, "rb") as fh:
                tar.addfile(_member(f"{top}/{rel}", os.path.getsize(path),
                                    0o755 if executable else 0o644), fh)
        tar.addfile(_member(f"{top}/SHA256SUMS", len(sums), 0o644), io.BytesIO(sums))


def _member(name: str, size: int, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
