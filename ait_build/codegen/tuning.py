"""Kernel configurations chosen per call: the profile a target checks in, and the kernels that
hold exactly the configurations their calls use.

A lowering that has several ways to run a call (CUTLASS tiles, schedules, stream-K) describes
the call as a `Tunable`: a readable *family* (what shapes the kernel's code), the static
*problem* (what else the speed depends on), the run-time *extent* the choice may depend on
(GEMM rows, conv batch), every candidate configuration and the heuristic's ladder. It records
the call with `Lowerer.tuned_call`, which plans it with the ladder alone (what a build without a
profile runs). `finalize` then takes the target's profile (`profile_cache`, written by
`ait-build profile`, read by spec/profile.py): per (family, problem) the best configuration
measured at several extents.
Calls that share a kernel get one kernel holding the union of their configurations, and each
call passes `config`: a C++ expression that picks, for the run-time extent, the configuration
profiled for the smallest measured extent at or above it (the largest beyond the last), or -1
(the kernel's heuristic) where the profile has no entry.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Callable

from ait_build.codegen.cexpr import cexpr
from ait_build.errors import AitError, did_you_mean
from ait_build.ir.dims import Dim

# A call without an entry borrows the choice of the closest profiled problem of its family whose
# every size is within this factor (and whose zero sizes match): a model edit such as 1000 ->
# 1008 classes keeps its kernels (and the build compiles nothing new for them) instead of
# switching to the heuristic's configurations.
NEARBY_RATIO = 1.25


@dataclass(frozen=True)
class Config:
    """One way to run a tunable call: `name` is what profiles and logs say; `kind` and `context`
    say what the backend renders for it (its own translation unit); `tile` (rows, columns) and
    `base_align` (bytes its operands' bases need) are what the kernel's heuristic and dispatch
    know of it; `workspace(tunable, extent)` the scratch bytes it may need; `estimated` False
    for one that a backend's estimate leaves unranked, so that only a profile picks it."""

    name: str
    kind: str
    context: tuple  # sorted (key, value) pairs
    tile: tuple = ()
    base_align: int = 0
    workspace: Callable | None = field(default=None, compare=False, hash=False)
    estimated: bool = field(default=True, compare=False)


@dataclass(frozen=True)
class Tunable:
    kind: str  # the profiling driver: 'gemm' | 'conv2d'
    family: str  # readable identity of the kernel code, e.g. 'gemm float16 b=col act=gelu align=8,8,8'
    problem: tuple  # static (name, int) pairs besides the extent
    extent: Dim  # the run-time size the choice depends on (GEMM rows M, conv batch N)
    scalars: tuple  # (parameter name, Dim | float) of the kernel's size arguments, in order
    operands: tuple  # (pointer parameter, present) flags, for the profiling driver
    candidates: tuple  # every Config the backend offers for this call
    ladder: tuple  # the heuristic's Configs, tried in order (the last takes anything)
    # (extent) -> the Config the backend's estimate ranks first, or None: calls without a
    # profile entry run the heuristic
    estimate: Callable | None = field(default=None, compare=False, hash=False)

    @property
    def problem_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.problem)

    @property
    def key(self) -> tuple:
        return (self.family, self.problem_text)

    def static_values(self, dims: dict) -> dict:
        """The scalar arguments at concrete dims (name -> int/float)."""
        return {name: (Dim.of(v).eval(dims) if isinstance(v, (Dim, int)) else v)
                for name, v in self.scalars}


@dataclass(frozen=True)
class TunedCall:
    """What finalize needs of a tuned step: the call, and how to make its kernel from a list of
    configurations (and the ladder's indices in it)."""

    tunable: Tunable
    make: Callable  # (configs: tuple[Config], ladder: tuple[int]) -> Kernel
    group: str  # calls with the same group share one kernel


# -- the profile file -----------------------------------------------------------------------------
class Profile:
    """A target's profile (profiles/<target>.yaml, read by spec/profile.py): (family, problem)
    -> entries (each with an `extent` and a `config` name) sorted by extent."""

    def __init__(self, path: str = "", entries: dict | None = None, root: str = "",
                 writes_to: str = ""):
        self.path = path
        self.entries = entries or {}
        self.root = root  # the folder the manifest names `path` relative to (its project's)
        self.writes_to = writes_to  # the project's profile, which `ait-build profile` writes

    def choices(self, tunable: Tunable) -> tuple:
        """(extent, Config) buckets for the call, or () when the profile has no usable entry."""
        return _usable(self.entries.get(tunable.key, ()), tunable)

    def unknown_configs(self, tunable: Tunable) -> list:
        """Warnings for the call's entries that name a configuration its family does not have
        for it (an edited file, or one from another ait-build version): the call runs the
        heuristic, and the build says so with the entry's place."""
        names = {c.name for c in tunable.candidates}
        return [f"{e.where or self.path}: warning: the entry for {tunable.family} "
                f"{tunable.problem_text} (extent {e.extent}) names configuration '{e.config}', "
                f"which this family does not have for it{did_you_mean(e.config, names)}; the call "
                "uses another choice" for e in self.entries.get(tunable.key, ())
                if e.config not in names]

    def nearby_choices(self, tunable: Tunable, extents: list) -> tuple:
        """(extent, Config) for those of the call's `extents` that a profiled problem of its
        family measured nearby: within NEARBY_RATIO in every size and in the extent itself (a
        choice measured at 6272 rows says nothing of 196). Per extent the closest such entry
        wins (summed |log ratio| of the sizes and the extent); () where none is near."""
        near = []  # (distance in sizes, measured extent, Config) of every usable nearby entry
        for (family, problem), entries in self.entries.items():
            if family != tunable.family or problem == tunable.problem_text:
                continue
            distance = _problem_distance(problem, tunable.problem)
            if distance < math.inf:
                near += [(distance, measured, config)
                         for measured, config in _usable(entries, tunable)]
        chosen = []
        for extent in extents:
            total, config = min(((d + _size_distance(m, extent), c) for d, m, c in near),
                                key=lambda pair: pair[0], default=(math.inf, None))
            if total < math.inf:
                chosen.append((extent, config))
        return tuple(chosen)


def _usable(entries: tuple, tunable: Tunable) -> tuple:
    by_name = {c.name: c for c in tunable.candidates}
    if not entries or any(e.config not in by_name for e in entries):
        return ()
    return tuple((e.extent, by_name[e.config]) for e in entries)


def _problem_distance(text: str, problem: tuple) -> float:
    """Sum of |log(ratio)| over the sizes of a profile's problem text and a call's problem;
    infinite when their names differ, a zero meets a non-zero, or a ratio exceeds NEARBY_RATIO."""
    pairs = [item.partition("=") for item in text.split()]
    if [name for name, _, _ in pairs] != [name for name, _ in problem]:
        return math.inf
    distance = 0.0
    for (_, _, value), (_, size) in zip(pairs, problem):
        if value == str(size):
            continue
        if not (isinstance(size, int) and value.isdigit()):
            return math.inf  # a name, not a size: only the same one matches
        distance += _size_distance(int(value), size)
    return distance


def _size_distance(profiled: int, size: int) -> float:
    """|log(profiled / size)|, 0 for equal sizes, infinite for a zero against a non-zero or
    beyond NEARBY_RATIO."""
    if profiled == size:
        return 0.0
    if min(profiled, size) <= 0 or max(profiled, size) > NEARBY_RATIO * min(profiled, size):
        return math.inf
    return abs(math.log(profiled / size))


def gemm_rows(problem: dict, extent: int) -> tuple:
    """(rows, batches) of a GEMM problem at `extent`: the extent is the rows, or with a problem
    `m` (a GEMM per image, backends/gpu/gemm.py's `per_image`) the number of images."""
    if "m" in problem:
        return problem["m"], extent
    return extent, problem.get("l", 1)


# -- choosing per call ----------------------------------------------------------------------------
def call_extents(plan, tunable: Tunable) -> list:
    """The call's extent at the dims' min, opt and max (the extents a profile measures), sorted,
    without zero."""
    return sorted({tunable.extent.eval(plan.graph.bounds_env(which))
                   for which in ("min", "opt", "max")} - {0})


def estimated_choices(tunable: Tunable, extents: list) -> tuple:
    """(extent, Config) buckets of the backend's estimate at `extents`, or () without an
    estimate."""
    if tunable.estimate is None:  # the engine has none for this call (e.g. run-time sizes)
        return ()
    return tuple((extent, tunable.estimate(extent)) for extent in extents)


def borrowed_or_estimated(plan, profile: Profile, tunable: Tunable) -> tuple:
    """Buckets of a call without an entry: per extent, a nearby problem's measured choice, else
    the estimate's; and whether any extent borrowed."""
    extents = call_extents(plan, tunable)
    borrowed = profile.nearby_choices(tunable, extents)
    have = {extent for extent, _ in borrowed}
    estimated = estimated_choices(tunable, [e for e in extents if e not in have])
    return tuple(sorted(borrowed + estimated, key=lambda bucket: bucket[0])), bool(borrowed)


def selector(extent: Dim, buckets: list) -> str:
    """C++ expression of the configuration index for a run-time extent: the bucket whose
    measured extent is the smallest at or above it, the last beyond."""
    merged = []
    for limit, index in buckets:  # neighbours with the same choice need no comparison
        if merged and merged[-1][1] == index:
            merged[-1] = (limit, index)
        else:
            merged.append((limit, index))
    text = str(merged[-1][1])
    if len(merged) == 1:
        return text
    x = cexpr(extent)
    for limit, index in reversed(merged[:-1]):
        text = f"({x} <= {limit} ? {index} : {text})"
    return text


@dataclass
class TuningReport:
    profile: str = ""
    calls: int = 0
    profile_root: str = ""  # Profile.root
    writes_to: str = ""  # where `ait-build profile` would write the missing entries
    profiled: int = 0
    nearby: int = 0  # of the calls without an entry, those borrowing a nearby problem's choice
    estimated: int = 0  # of the others, those running the backend's estimate
    warnings: list = field(default_factory=list)  # entries naming configurations not there

    @property
    def unprofiled(self) -> int:
        return self.calls - self.profiled

    def summary(self) -> str:
        """One line for the build log (after a line per warning), or '' when every tunable call
        has its profile."""
        if not self.unprofiled:
            return ""
        return "\n".join(self.warnings + [self._coverage()])

    def _coverage(self) -> str:
        where = os.path.relpath(self.profile) if self.profile else "no profile_cache"
        heuristic = self.unprofiled - self.nearby - self.estimated
        how = [f"{_uses(self.nearby)} the choice profiled for a nearby problem"] if self.nearby else []
        how += [f"{_uses(self.estimated)} the estimate's choice"] if self.estimated else []
        how += [f"{_uses(heuristic)} the heuristic"] if heuristic else []
        into = f" into {os.path.relpath(self.writes_to)}" if self.writes_to else ""
        return (f"{self.unprofiled} of {self.calls} GEMM/conv calls have no entry in {where}: "
                f"{' and '.join(how)} (`ait-build profile` measures them{into})")


def _uses(count: int) -> str:
    return f"{count} uses" if count == 1 else f"{count} use"


def finalize(plan, profile: Profile) -> TuningReport:
    """Gives every group of tuned steps one kernel with the union of the configurations its
    calls use, and each step its `config` argument."""
    report = TuningReport(profile=profile.path, profile_root=profile.root,
                          writes_to=profile.writes_to)
    groups: dict = {}
    for i, step in enumerate(plan.steps):
        if step.tuning is not None:
            groups.setdefault(step.tuning.group, []).append(i)
    for indices in groups.values():
        calls = [plan.steps[i].tuning for i in indices]
        chosen = [profile.choices(c.tunable) for c in calls]
        exact = [bool(ch) for ch in chosen]
        borrowed = [False] * len(calls)
        for j, call in enumerate(calls):
            if not exact[j]:
                chosen[j], borrowed[j] = borrowed_or_estimated(plan, profile, call.tunable)
        ladder = calls[0].tunable.ladder
        if all(chosen):  # keep only the ladder's last: it takes any call (unaligned pointers)
            ladder = ladder[-1:]
        configs = list(ladder) + sorted({c for ch in chosen for _, c in ch} - set(ladder),
                                        key=lambda c: c.name)
        index = {c.name: i for i, c in enumerate(configs)}
        kernel = calls[0].make(tuple(configs), tuple(range(len(ladder))))
        for i, call, ch, is_exact, is_borrowed in zip(indices, calls, chosen, exact, borrowed):
            report.warnings += [w for w in profile.unknown_configs(call.tunable)
                                if w not in report.warnings]
            step = plan.steps[i]
            report.calls += 1
            report.profiled += is_exact
            report.nearby += is_borrowed and not is_exact
            report.estimated += bool(ch) and not is_borrowed and not is_exact
            scratch = step.scratch_shared
            if ch:
                expr = selector(call.tunable.extent, [(e, index[c.name]) for e, c in ch])
                largest = plan.at_max(call.tunable.extent)  # the last bucket runs up to it
                for j, (extent, config) in enumerate(ch):
                    if config.workspace:
                        upto = max(extent, largest) if j == len(ch) - 1 else extent
                        scratch = max(scratch, config.workspace(call.tunable, upto))
            else:
                expr = "-1"
            plan.steps[i] = dataclasses.replace(step, kernel=kernel, args=step.args + (expr,),
                                                scratch_shared=scratch, tuning=None)
    if groups:
        plan.kernels = {}
        for step in plan.steps:
            plan.add_kernel(step.kernel)
    return report


def tunables(plan) -> list:
    """(group, TunedCall) of every tuned step, before finalize: what `ait-build profile` measures."""
    return [(s.tuning.group, s.tuning) for s in plan.steps if s.tuning is not None]


def check_candidates(tunable: Tunable) -> None:
    names = [c.name for c in tunable.candidates]
    if len(set(names)) != len(names) or any(c not in tunable.candidates for c in tunable.ladder):
        raise AitError(f"internal: bad candidate list for {tunable.family}")
