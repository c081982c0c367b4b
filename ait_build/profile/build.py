"""SCons rules that compile and link profiling harnesses, run by `ait-build profile` as

    python -m SCons -Q -f <this folder>/sconstruct.py -C ROOT listing=build/<t>/profile/harnesses.json

Each harness is one program: its chunks of candidates and its driver compile as separate
objects through the target's toolchain, in parallel (-j, as the model build chooses it) and
through the same CacheDir (`cache=`, default $AIT_BUILD_CACHE, else build/cache), so a second
profile of unchanged kernels compiles nothing. As in a model build, the toolchain's versions are
a Value of every step, progress lines count the steps still to run, and build/.lock keeps other
builds of the checkout (which share build/.sconsign) waiting.
"""

from __future__ import annotations

import json
import os
import sys

from SCons.Script import Default, Dir, Exit, GetOption

from ait_build.build.cache import cache_folder
from ait_build.build.lock import hold_build_lock
from ait_build.build.progress import Progress
from ait_build.build.scons import Options, base_env, target_env, toolchain_value
from ait_build.errors import AitError
from ait_build.files.read import read_text
from ait_build.pipeline import load_target


def setup(arguments: dict) -> None:
    root = Dir("#").abspath
    try:
        listing = json.loads(read_text(arguments["listing"]))
        target = load_target(listing["target"])
        cache, _ = cache_folder(arguments, root)
        opts = Options(root=root, targets=[target.name], specs=[], cache=cache,
                       cache_readonly=arguments.get("cache_readonly", "0") == "1",
                       verbose=arguments.get("verbose", "0") == "1")
        if not GetOption("no_exec"):  # the model build's .sconsign and CacheDir: one at a time
            hold_build_lock(os.path.join(root, "build"))
        env = base_env(opts, {target.backend})
        progress = Progress()
        env["PRINT_CMD_LINE_FUNC"] = progress
        tenv = target_env(env, target, root)
        toolchain = toolchain_value(tenv)
    except (AitError, OSError, KeyError, ValueError) as exc:
        print(f"scons: error: {exc}", file=sys.stderr)
        Exit(2)
    programs = []
    file = tenv.fs.File  # nodes, not strings: SCons would substitute `$` in a string path
    for harness in listing["harnesses"]:
        folder = harness["folder"]
        henv = tenv.Clone(AIT_LABEL=f"{target.name} profile {harness['group']}")
        objects = [henv.AitCompile(target=file(os.path.join(folder, "obj", os.path.splitext(
            os.path.basename(s))[0] + tenv["AIT_OBJ_SUFFIX"])), source=file(os.path.join(folder, s)))[0]
            for s in harness["sources"]]
        # the model libraries' link line, making a program: nvcc links the CUDA runtime statically
        program = henv.AitProgram(target=file(os.path.join(folder, harness["program"])),
                                  source=objects)[0]
        programs.append(program)
        # a new compiler or library version rebuilds (and misses the cache), as in a model build
        henv.Depends(objects + [program], toolchain)
        for node in objects + [program]:
            progress.add_step(henv, node)
    Default(programs)
