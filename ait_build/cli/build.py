"""`ait-build build`: one spec's library, built by SCons in a subprocess."""

from __future__ import annotations

import os

from ait_build.build.invoke import build
from ait_build.build.launcher import LAUNCHERS
from ait_build.cli.args import add_spec_argument, add_target_argument, positive_int
from ait_build.runtime.manifest import libraries_text, load_manifest

DESCRIPTION = ("Build one spec for one target with SCons, in the project around the working "
               "directory (the nearest folder above it with an SConstruct, else the working "
               "directory itself): its build/<target>/<model>/ gets lib<model>.so, the header, "
               "manifest.json and weights.safetensors.")
EXAMPLES = ["ait-build build specs/mlp.yaml --target cpu",
            "ait-build build resnet50 --target h200 -j 2 --cache ~/.cache/ait-build",
            "ait-build build resnet50 --target h200 --launcher sccache"]


def add_arguments(p) -> None:
    add_spec_argument(p)
    add_target_argument(p)
    p.add_argument("-j", "--jobs", type=positive_int, help="parallel compile jobs (default: the "
                   "cores, capped by memory), e.g. -j 2")
    p.add_argument("--cache", metavar="DIR", help="CacheDir shared by models and checkouts "
                   "(default: $AIT_BUILD_CACHE, else build/cache; off for none)")
    p.add_argument("--cache-readonly", action="store_true", help="read the cache, never write it")
    p.add_argument("--launcher", choices=sorted(LAUNCHERS), help="run each compile through this "
                   "compiler launcher, whose cache may be shared between machines (default: none; "
                   "docs/ci.md)")
    p.add_argument("-v", "--verbose", action="store_true", help="print full command lines")


def run(args) -> int:
    out = build(args.spec, args.target, args.jobs, args.cache, args.cache_readonly, args.verbose,
                launcher=args.launcher or "")
    name = os.path.basename(out)
    # the libraries it linked: the cpu target's `auto` BLAS is whichever is installed
    libraries = libraries_text(load_manifest(os.path.join(out, "manifest.json")).libraries)
    print(f"built {os.path.relpath(os.path.join(out, f'lib{name}.so'))} "
          f"(header {name}.h, manifest.json, weights.safetensors)"
          + (f"; with {libraries}" if libraries else ""))
    return 0
