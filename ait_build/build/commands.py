"""Compile and link steps that run an argument vector: no shell, no SCons substitution.

SCons' own command actions pass every path and flag through `$` substitution (where `${...}`
evaluates Python) and then `sh -c`, so a spec file named `${__import__('os').system(...)}.yaml`,
a checkout under a folder holding `$`, or a target flag such as `-Wl,-rpath,$ORIGIN` would be
evaluated, split or emptied. These actions build the command from the Toolchain (the same lines
the codegen tests use) and hand it to the compiler as a list, so every byte arrives as written.
The build signature is the command without its machine-specific paths (include and library
folders, prefix maps), without a compiler launcher (launcher.py) and, for a compile, without the
source and object paths, so checkouts in different folders, builds with or without the
launcher, and models in one checkout share cache entries (cache.py).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import SCons.Action
import SCons.Builder
import SCons.Scanner.C
import SCons.Scanner.Prog

from ait_build.build import precompiled
from ait_build.build.cache import keyed_by_content
from ait_build.codegen.digest import sha256_file


class ArgvAction(SCons.Action.FunctionAction):
    """Runs `command(target, source, env) -> (argv, signature)`, with `extra(target, source,
    env)`'s arguments added when it runs (never in the signature); prints `label(...)` as its
    line (or the whole argv with verbose=1)."""

    def __init__(self, command, verb: str, extra=None):
        self.command, self.verb, self.extra = command, verb, extra
        super().__init__(self._run, {"strfunction": self._line})

    def _run(self, target, source, env):
        argv, _ = self.command(target, source, env)
        if self.extra:
            argv = argv + self.extra(target, source, env)
        try:
            return subprocess.run(argv, env=env["ENV"], check=False).returncode
        except OSError as exc:
            sys.stderr.write(f"cannot run '{argv[0]}': {exc.strerror}\n")
            return 1

    def _line(self, target, source, env, executor=None):
        if env.get("AIT_VERBOSE"):
            return shlex.join(self.command(target, source, env)[0])
        shown = source[0] if self.verb == "compiling" else target[0]
        return f"{self.verb} {shown.name} ({env['AIT_LABEL']})"

    def get_presig(self, target, source, env, executor=None):
        if executor:
            target, source = executor.get_all_targets(), executor.get_all_sources()
        return "\0".join(self.command(target, source, env)[1]).encode()

    def get_implicit_deps(self, target, source, env, executor=None):
        """The compiler itself, as SCons' command actions do: a new compiler rebuilds."""
        found = shutil.which(env["AIT_TOOLCHAIN"].cxx, path=env["ENV"].get("PATH"))
        return [env.fs.File(found)] if found else []


def _rel(node) -> str:
    """A node's path relative to the project root, where SCons runs its actions."""
    return node.get_internal_path()


def compile_command(target, source, env) -> tuple:
    """(argv, signature): the signature names neither the object, the source nor any folder
    (cache.py keys objects by it and their inputs' bytes, so models and checkouts share them)."""
    tc = env["AIT_TOOLCHAIN"]
    argv = tc.compile_command(_rel(source[0]), _rel(target[0]), prefix_map=env["AIT_ROOT"],
                              seed=source_digest(source[0].get_abspath()))
    signature = tc.compile_command("SOURCE", "OBJECT", seed="SOURCE-SHA256")
    launcher = env.get("AIT_LAUNCHER")  # not in the signature: it changes no object
    return ((launcher.argv() if launcher else []) + argv,
            _without(signature, {f"-I{d}" for d in tc.include_dirs}))


def precompiled_header(target, source, env) -> list:
    """`-include` of the target's precompiled kernel header where the compile step has one
    (AIT_PRECOMPILED: the backend's header template and support files, and the folder) and no
    launcher: it leaves the object as it is, so it is no part of the command's signature."""
    given = env.get("AIT_PRECOMPILED")
    if not given or env.get("AIT_LAUNCHER"):
        return []
    header, support_files, folder = given
    return precompiled.prefix_args(env["AIT_TOOLCHAIN"], header, support_files, folder)


def source_digest(path: str) -> str:
    """The first 16 hex digits of the file's SHA-256 (its name where it cannot be read: a dry
    run prints commands of sources not yet generated)."""
    try:
        return sha256_file(path)[:16]
    except OSError:
        return os.path.basename(path)


def link_command(target, source, env) -> tuple:
    tc = env["AIT_TOOLCHAIN"]
    argv = tc.link_command([_rel(s) for s in source], _rel(target[0]))
    return argv, _without(argv, {f"-L{d}" for d in tc.lib_dirs})


def program_command(target, source, env) -> tuple:
    tc = env["AIT_TOOLCHAIN"]
    argv = tc.program_command([_rel(s) for s in source], _rel(target[0]))
    return argv, _without(argv, {f"-L{d}" for d in tc.lib_dirs})


def _without(argv: list, folders: set) -> list:
    """The signature of a command: where a header or library lies is not what is built."""
    return [a for a in argv if a not in folders]


def add_builders(env) -> None:
    """AitCompile (one source -> one object, cached by content: cache.py), AitLink (objects ->
    shared library) and AitProgram (objects -> program)."""
    env.Append(BUILDERS={
        "AitCompile": SCons.Builder.Builder(action=ArgvAction(compile_command, "compiling",
                                                                   precompiled_header),
                                            emitter=keyed_by_content,
                                            source_scanner=SCons.Scanner.C.CScanner(),
                                            single_source=True),
        "AitLink": SCons.Builder.Builder(action=ArgvAction(link_command, "linking"),
                                         target_scanner=SCons.Scanner.Prog.ProgramScanner()),
        "AitProgram": SCons.Builder.Builder(action=ArgvAction(program_command, "linking"),
                                            target_scanner=SCons.Scanner.Prog.ProgramScanner())})


def literal(text: str) -> str:
    """`text` as SCons reads it back unchanged where it substitutes (`$` doubled)."""
    return str(text).replace("$", "$$")
