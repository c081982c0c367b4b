"""`ait-build profile`: its arguments; the work is profile/run.py's."""

from __future__ import annotations

from ait_build.cli.args import add_spec_argument, add_target_argument, positive_int
from ait_build.profile.run import run_profile

DESCRIPTION = ("`ait-build profile SPEC... --target T`: compile every candidate configuration of "
               "the specs' GEMMs and convs, time them on the GPU, and merge the winners into the "
               "target's profile file.")
EXAMPLES = ["ait-build profile resnet50 --target h200",
            "ait-build profile bert_base --target h200 --batch 1,128 --dim seq=128",
            "ait-build profile vit_b16 --target h200 --compile-only"]


def add_arguments(p) -> None:
    add_spec_argument(p, many=True)
    add_target_argument(p, default=None, required=True, purpose="the cuda target to profile",
                        paths=True)
    p.add_argument("--batch", help="batch values to profile, e.g. 1,32,256 (default: the batch "
                   "dim's min, opt and max)")
    p.add_argument("--dim", action="append", help="NAME=VALUE[,VALUE...] for another dim "
                   "(default: its opt); repeatable")
    p.add_argument("--kernels", action="append", metavar="TEXT",
                   help="only the kernel families whose name contains TEXT, e.g. 'conv2d float16 "
                   "act=relu' (repeatable; the profile keeps the other families' entries)")
    p.add_argument("-j", "--jobs", type=positive_int, help="parallel compile jobs (default: as a build)")
    p.add_argument("--cache", help="CacheDir for the compiled candidates (default: "
                   "$AIT_BUILD_CACHE, else build/cache; off for none)")
    p.add_argument("--compile-only", action="store_true",
                   help="compile the harnesses and stop (no GPU needed; fills the cache)")
    p.add_argument("--measure-only", action="store_true",
                   help="measure with harnesses an earlier --compile-only built (a GPU machine "
                   "without the compiler or the time to compile)")
    p.add_argument("--fresh", action="store_true", help="measure again what the journal holds")
    p.add_argument("-o", "--output", help="profile file to merge into (default: the project's "
                   "profiles/<target>.yaml, the target's profile_cache, copied from the stock "
                   "one where the project has none)")


def run(args) -> int:
    return run_profile(args)
