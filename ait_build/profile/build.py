"""SCons rules that compile and link profiling harnesses, run by `ait-build profile` as

    python -m SCons -Q -f <this folder>/sconstruct.py -C ROOT listing=build/<t>/profile/harnesses.json

Each harness is one program: its chunks of candidates and its driver compile as separate
objects through the target's toolchain, in parallel (-j, as the model build chooses it) and
through the same CacheDir (`cache=`, default $AIT_BUILD_CACHE), so a second profile of
unchanged kernels compiles nothing.
"""

from __future__ import annotations

import json
import os
import sys

from SCons.Script import Default, Dir, Exit

from ait_build.errors import AitError


def setup(arguments: dict) -> None:
    from ait_build.scons import Options, base_env, target_env
    from ait_build.scons_progress import Progress
    from ait_build.spec.target import load_target
    root = Dir("#").abspath
    try:
        with open(arguments["listing"], encoding="utf-8") as fh:
            listing = json.load(fh)
        target = load_target(listing["target"])
        cache = arguments.get("cache", os.environ.get("AIT_BUILD_CACHE", ""))
        opts = Options(root=root, targets=[target.name], specs=[], cache=cache,
                       cache_readonly=arguments.get("cache_readonly", "0") == "1",
                       verbose=arguments.get("verbose", "0") == "1")
        env = base_env(opts, {target.backend})
        progress = Progress()
        env["PRINT_CMD_LINE_FUNC"] = progress
        tenv = target_env(env, target, root)
    except (AitError, OSError, KeyError, ValueError) as exc:
        print(f"scons: error: {exc}", file=sys.stderr)
        Exit(2)
    programs = []
    for harness in listing["harnesses"]:
        folder = harness["folder"]
        henv = tenv.Clone(AIT_LABEL=f"{target.name} profile {harness['group']}")
        objects = [henv.SharedObject(target=os.path.join(folder, "obj", os.path.splitext(os.path.basename(s))[0]),
                                     source=os.path.join(folder, s))[0] for s in harness["sources"]]
        # the model libraries' link line, making a program: nvcc links the CUDA runtime statically
        quiet = {} if opts.verbose else {"LINKCOMSTR": "linking ${TARGET.file} (${AIT_LABEL})"}
        programs += henv.Program(target=os.path.join(folder, harness["program"]), source=objects,
                                 LINK="$SHLINK", LINKFLAGS=[], **quiet)
        for node in objects + programs[-1:]:
            progress.add_step(henv, node)
    Default(programs)
