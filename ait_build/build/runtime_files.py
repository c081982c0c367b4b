"""The files a built library carries in its folder so that it loads anywhere: the BLAS shared
libraries its `$ORIGIN` rpath finds, and their licences (Toolchain.runtime_files).

Each is a hard link of the installed file where the build folder is on its filesystem (no space
taken), else a hard link of one copy kept per target under build/<target>/.runtime/, so a
project of many models holds one copy of a large BLAS (MKL's kernels are hundreds of MB).
"""

from __future__ import annotations

import os
import shutil


def place(source: str, dest: str, store: str | None = None) -> None:
    """`dest` with the bytes of `source`: a hard link where possible, through `store` (a folder
    on the build's filesystem) where `source` lies on another one, else a copy."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if _link(source, dest):
        return
    if store:
        kept = os.path.join(store, os.path.basename(dest))
        if not _same_file_contents(source, kept):
            _copy(source, kept)
        if _link(kept, dest):
            return
    _copy(source, dest)


def carry(files, folder: str, store: str | None = None) -> None:
    """Places every (path, name) of `files` under `folder`."""
    for path, name in files:
        place(path, os.path.join(folder, name), store)


def _link(source: str, dest: str) -> bool:
    tmp = f"{dest}.tmp{os.getpid()}"
    try:
        os.link(source, tmp)
    except OSError:
        return False
    os.replace(tmp, dest)
    return True


def _copy(source: str, dest: str) -> None:
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = f"{dest}.tmp{os.getpid()}"
    shutil.copy2(source, tmp)
    os.replace(tmp, dest)


def _same_file_contents(source: str, kept: str) -> bool:
    """A kept copy made from this version of the file (copy2 keeps size and time)."""
    try:
        a, b = os.stat(source), os.stat(kept)
    except OSError:
        return False
    return a.st_size == b.st_size and int(a.st_mtime) == int(b.st_mtime)


def _carry_action(target, source, env):
    for node, src in zip(target, source):
        place(src.get_abspath(), node.get_abspath(), env["AIT_RUNTIME_STORE"])
    return 0


def add_builders(env) -> None:
    """AitCarry: installed files -> the same files in a build folder (a silent step). Through
    the environment's own factories: a package (runtime/package.py) places files without SCons."""
    env.Append(BUILDERS={"AitCarry": env.Builder(action=env.Action(_carry_action, None))})


def carry_rules(env, folder: str, store: str) -> list:
    """Declares the carried files of `folder`'s library (env's AIT_TOOLCHAIN); returns their
    nodes. They are decided on by time stamps (a reinstalled BLAS is placed again, without
    hashing hundreds of MB each build) and never go into the cache (they are installed files)."""
    files = env["AIT_TOOLCHAIN"].runtime_files
    if not files:
        return []
    cenv = env.Clone(AIT_RUNTIME_STORE=store)
    cenv.Decider("timestamp-match")
    file = env.fs.File  # nodes, not strings: SCons would substitute `$` in a string path
    nodes = cenv.AitCarry(target=[file(os.path.join(folder, name)) for _, name in files],
                          source=[file(path) for path, _ in files])
    cenv.NoCache(nodes)
    return list(nodes)
