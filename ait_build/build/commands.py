"""Compile and link steps that run an argument vector: no shell, no SCons substitution.

SCons' own command actions pass every path and flag through `$` substitution (where `${...}`
evaluates Python) and then `sh -c`, so a spec file named `${__import__('os').system(...)}.yaml`,
a checkout under a folder holding `$`, or a target flag such as `-Wl,-rpath,$ORIGIN` would be
evaluated, split or emptied. These actions build the command from the Toolchain (the same lines
the codegen tests use) and hand it to the compiler as a list, so every byte arrives as written.
The build signature is the command without its machine-specific paths (include and library
folders, prefix maps) and without a compiler launcher (launcher.py), so checkouts in different
folders, with or without the launcher, share cache entries.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys

import SCons.Action
import SCons.Builder
import SCons.Scanner.C
import SCons.Scanner.Prog


class ArgvAction(SCons.Action.FunctionAction):
    """Runs `command(target, source, env) -> (argv, signature)`; prints `label(...)` as its line
    (or the whole argv with verbose=1)."""

    def __init__(self, command, verb: str):
        self.command, self.verb = command, verb
        super().__init__(self._run, {"strfunction": self._line})

    def _run(self, target, source, env):
        argv, _ = self.command(target, source, env)
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
    tc = env["AIT_TOOLCHAIN"]
    obj, src = _rel(target[0]), _rel(source[0])
    argv = tc.compile_command(src, obj, prefix_map=env["AIT_ROOT"])
    seed = [] if tc.host_prefix else [f"-frandom-seed={obj}"]  # reproducible objects (g++)
    signature = [tc.cxx, *tc.flags, *(f"-D{d}" for d in tc.defines), *seed, "-c", src, "-o", obj]
    launcher = env.get("AIT_LAUNCHER")  # not in the signature: it changes no object
    return (launcher.argv() if launcher else []) + argv + seed, signature


def link_command(target, source, env) -> tuple:
    tc = env["AIT_TOOLCHAIN"]
    return _without_lib_dirs(tc, tc.link_command([_rel(s) for s in source], _rel(target[0])))


def program_command(target, source, env) -> tuple:
    tc = env["AIT_TOOLCHAIN"]
    return _without_lib_dirs(tc, tc.program_command([_rel(s) for s in source], _rel(target[0])))


def _without_lib_dirs(tc, argv: list) -> tuple:
    """(argv, its signature): where a library lies is not what is linked."""
    lib_dirs = {f"-L{d}" for d in tc.lib_dirs}
    return argv, [a for a in argv if a not in lib_dirs]


def add_builders(env) -> None:
    """AitCompile (one source -> one object), AitLink (objects -> shared library) and
    AitProgram (objects -> program)."""
    env.Append(BUILDERS={
        "AitCompile": SCons.Builder.Builder(action=ArgvAction(compile_command, "compiling"),
                                            source_scanner=SCons.Scanner.C.CScanner(),
                                            single_source=True),
        "AitLink": SCons.Builder.Builder(action=ArgvAction(link_command, "linking"),
                                         target_scanner=SCons.Scanner.Prog.ProgramScanner()),
        "AitProgram": SCons.Builder.Builder(action=ArgvAction(program_command, "linking"),
                                            target_scanner=SCons.Scanner.Prog.ProgramScanner())})


def literal(text: str) -> str:
    """`text` as SCons reads it back unchanged where it substitutes (`$` doubled)."""
    return str(text).replace("$", "$$")
