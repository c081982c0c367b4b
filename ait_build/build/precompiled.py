"""A precompiled header for a backend's kernels, made the first time a kernel is compiled.

Every cpu kernel source begins with `#include "ait_cpu.h"`, and g++ spends about half of each
kernel's compile parsing that header and the intrinsics it pulls in (1.1-1.5 s of 2.5-3.5 s).
Where the backend names a header for it (`Backend.precompiled_header`) and the compiler is GCC,
the header and the support files it includes are rendered into build/<target>/.pch/<key>/ and
compiled once with the kernels' own flags (`-x c++-header`); each kernel is then compiled with
`-include` of it, which GCC serves from the .gch. The objects are byte for byte those of a
compile without it (tests/build/test_precompiled.py), so neither the object's signature nor
the cache key mentions it.

It is made lazily inside the compile step, under a file lock, so a build whose objects all come
from the cache makes none; `key` covers the header files' bytes, the compile flags and the
compiler's version, so a change of any of them makes a new one (the others are removed). It is
skipped under a compiler launcher (ccache and sccache would not cache a compile that reads one)
and wherever making it fails: the kernel then compiles as it would without.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess

from ait_build.codegen.render import render

NAME = "ait_precompiled.h"  # the header each kernel is compiled with `-include` of


@functools.lru_cache(maxsize=None)
def is_gcc(cxx: str) -> bool:
    """GCC's precompiled headers (.gch); clang and the GPU compilers are left out."""
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    except OSError:
        return False
    return "Free Software Foundation" in out.stdout and "clang" not in out.stdout.lower()


def header_files(header_template: str, support_files) -> dict:
    """file name -> text of what the pch folder holds: the support headers and the header."""
    files = {os.path.basename(path): render(template, {}) for path, template in support_files.items()}
    files[NAME] = render(header_template, {})
    return files


def key(files: dict, command: list, version: str) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\0".encode())
    digest.update("\0".join(command + [version]).encode())
    return digest.hexdigest()[:16]


def prefix_args(toolchain, header_template: str, support_files, folder: str) -> list:
    """`-include <header>` for a kernel's compile, making the precompiled header in `folder`
    (build/<target>/.pch) first where it does not exist; [] where it cannot be used."""
    if toolchain.host_prefix or not is_gcc(toolchain.cxx):
        return []
    home, files = _home(toolchain, header_template, tuple(sorted(support_files.items())), folder)
    header = os.path.join(home, NAME)
    try:
        if not os.path.exists(header + ".gch") and not _make(home, files, toolchain):
            return []
    except OSError:  # a folder it cannot write: the kernel compiles without it
        return []
    return ["-include", header]


@functools.lru_cache(maxsize=None)
def _home(toolchain, header_template: str, support_items: tuple, folder: str) -> tuple:
    """(the header's folder under `folder`, its files): rendered and hashed once per build
    process, not at every kernel's compile."""
    files = header_files(header_template, dict(support_items))
    command = toolchain.precompile_command(NAME, "OUT")
    return os.path.join(folder, key(files, command, toolchain.version())), files


def _make(home: str, files: dict, toolchain) -> bool:
    """Writes the headers and compiles the .gch in `home`, one process at a time (the first
    waits for none; the others find it made)."""
    folder = os.path.dirname(home)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        gch = os.path.join(home, NAME + ".gch")
        if os.path.exists(gch):
            return True
        for other in os.listdir(folder):  # made for other headers, flags or compilers
            if other != os.path.basename(home) and os.path.isdir(os.path.join(folder, other)):
                shutil.rmtree(os.path.join(folder, other), ignore_errors=True)
        os.makedirs(home, exist_ok=True)
        for name, text in files.items():
            with open(os.path.join(home, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        partial = gch + ".partial"
        done = subprocess.run(toolchain.precompile_command(NAME, os.path.basename(partial)),
                              cwd=home, env=toolchain.environ(), capture_output=True).returncode == 0
        if done:
            os.replace(partial, gch)  # whole or absent: a compile never reads half of one
        elif os.path.exists(partial):
            os.remove(partial)
        return done
