"""Choosing each problem's configuration from its measurements, and the profile's summary."""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.profile.measure import HEURISTIC, tolerance


@dataclass
class Pick:
    best: object = None  # measure.Result
    heuristic: object = None
    measured: int = 0
    rejected: int = 0  # wrong results or failures
    entry: dict | None = None

    def line(self) -> str:
        if self.best is None:
            return f"no configuration measured ({self.rejected} failed)"
        base = (f"best {self.best.config} {self.best.us:.1f} us of {self.measured}"
                + (f" ({self.rejected} wrong or failed)" if self.rejected else ""))
        if self.heuristic is not None and self.heuristic.us:
            base += f", heuristic {self.heuristic.us:.1f} us ({self.heuristic.us / self.best.us:.2f}x)"
        return base


def choose(problem, results: dict) -> Pick:
    """The fastest configuration whose output matches the heuristic's, as a profile entry."""
    limit = tolerance(problem.tunable.family)
    pick = Pick(heuristic=results.get(HEURISTIC))
    for name, result in sorted(results.items()):
        if name == HEURISTIC:
            continue
        pick.measured += 1
        if not result.valid(limit):
            pick.rejected += 1
            continue
        if pick.best is None or result.us < pick.best.us:
            pick.best = result
    if pick.best is not None:
        family, text, extent = problem.key
        pick.entry = {"family": family, "problem": text, "extent": extent,
                      "config": pick.best.config, "us": round(pick.best.us, 2),
                      "candidates": pick.measured}
        if pick.heuristic is not None and pick.heuristic.us is not None:
            pick.entry["heuristic_us"] = round(pick.heuristic.us, 2)
    return pick


def summary_lines(chosen: list, total_s: float, compile_s: float) -> list:
    """What the profile found, in a few lines: kernels, time spent, gain over the heuristic
    (the sum of each problem's time, as one call each)."""
    picks = [p for _, p in chosen if p.best is not None]
    with_base = [p for p in picks if p.heuristic is not None and p.heuristic.us]
    lines = [f"profiled {len(chosen)} problems of {len({pr.tunable.family for pr, _ in chosen})} "
             f"kernel families in {total_s:.0f} s ({compile_s:.0f} s compiling)"]
    if with_base:
        before = sum(p.heuristic.us for p in with_base)
        after = sum(p.best.us for p in with_base)
        lines.append(f"heuristic {before:.0f} us -> profiled {after:.0f} us over those problems "
                     f"({before / after:.2f}x)")
    missing = len(chosen) - len(picks)
    if missing:
        lines.append(f"{missing} problems had no valid configuration and keep the heuristic")
    return lines
