"""How close the estimate's choices come to the best measured candidate, over a profile journal
(`build/<target>/profile/journal.jsonl`: every candidate's time of every problem `ait-build
profile` measured): per (family, problem, extent), the measured time of the candidate the
estimate ranks first (backends/cuda/estimate.py) against the fastest, summed, and the problems
where it is furthest off. GEMM families only (the estimate's conv ranking needs the conv's
window, which the journal's key holds too, but no journal here has one).

    python bench/estimate_vs_journal.py bench/results/h100/estimate_small_k/journal.jsonl --skip-act silu
"""

from __future__ import annotations

import argparse
import collections

from ait_build.backends.cuda.configs import family_candidates
from ait_build.backends.cuda.cutlass import hopper_family
from ait_build.backends.cuda.estimate import Device, ranked
from ait_build.pipeline import find_target
from ait_build.profile.journal import Journal
from ait_build.profile.measure import tolerance


def family_act(family: str) -> str:
    return family.split("act=")[1].split()[0] if "act=" in family else "none"


def measured(path: str) -> dict:
    """(family, problem text, extent) -> {config: us} of the journal's results that count, as
    the profiler's report counts them (timed, no error, within the dtype's tolerance)."""
    times = collections.defaultdict(dict)
    for (_, key), results in Journal.load(path).seen.items():
        limit = tolerance(key[0])
        for config, result in results.items():
            if result.valid(limit):
                times[key][config] = result.us
    return times


def compare(times: dict, device: Device, skip_acts=()) -> tuple:
    """(sum of the estimate's choices' us, sum of the best us, rows sorted worst first)."""
    picked = best_total = 0.0
    rows = []
    for (family, text, extent), by_config in times.items():
        if not family.startswith("gemm ") or family_act(family) in skip_acts:
            continue
        problem = {k: int(v) for k, v in (item.split("=") for item in text.split())}
        offered = family_candidates(family, problem, device.hopper)[0]
        candidates = [c for c in offered if c.name in by_config]
        if len(candidates) < 2:
            continue
        choice = ranked(device, "gemm", problem, candidates, extent)[0][1].name
        best = min(by_config[c.name] for c in candidates)
        picked += by_config[choice]
        best_total += best
        rows.append((by_config[choice] / best, family, text, extent, choice, by_config[choice], best))
    return picked, best_total, sorted(rows, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("journal")
    parser.add_argument("--target", default="h200", help="the target whose device facts rank")
    parser.add_argument("--skip-act", default="", help="activations to leave out, e.g. silu")
    parser.add_argument("--worst", type=int, default=10)
    args = parser.parse_args()
    target = find_target(args.target)
    device = Device.of(target, hopper_family(target, "gemm"))
    picked, best, rows = compare(measured(args.journal), device,
                                 tuple(a for a in args.skip_act.split(",") if a))
    print(f"{len(rows)} problems: the estimate's choices {picked:.0f} us, the best {best:.0f} us "
          f"({picked / best:.2f}x)")
    for ratio, family, text, extent, choice, us, fastest in rows[:args.worst]:
        print(f"  {ratio:.2f}x  {family}  {text}  extent {extent}: {choice} {us:.1f} us, best {fastest:.1f}")


if __name__ == "__main__":
    main()
