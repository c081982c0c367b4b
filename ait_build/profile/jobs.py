"""What to measure: a spec's tuned calls (codegen/tuning.py) at the profiled dim values, grouped
by the kernel they share. Each distinct (family, problem, extent) is measured once, however many
calls or specs have it."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

from ait_build.codegen.tuning import Tunable, tunables
from ait_build.errors import AitError


@dataclass(frozen=True)
class Problem:
    tunable: Tunable
    extent: int
    values: tuple  # (scalar name, value) at this point, in the kernel's order

    @property
    def key(self) -> tuple:
        """What a profile entry is keyed by: (family, problem text, extent)."""
        return (self.tunable.family, self.tunable.problem_text, self.extent)

    def describe(self) -> str:
        # the extent: a GEMM's rows, or the images (n) of a conv or of a GEMM per image (`m` given)
        rows = self.tunable.kind == "gemm" and "m" not in dict(self.tunable.problem)
        name = "m" if rows else "n"
        return f"{self.tunable.problem_text} {name}={self.extent}"


@dataclass
class Job:
    """One kernel group: its configurations' code is the same for every problem in it."""

    group: str
    tunable: Tunable  # the first call's (family, kind, candidates and ladder are the group's)
    make: Callable
    problems: list = field(default_factory=list)

    @property
    def family(self) -> str:
        return self.tunable.family

    @property
    def candidates(self) -> tuple:
        """Every configuration some problem of the group may run (calls differ: a conv's Hopper
        configurations need 64-channel multiples), the ladder first."""
        seen = {}
        for tunable in [self.tunable] + [p.tunable for p in self.problems]:
            for config in tunable.candidates:
                seen.setdefault(config.name, config)
        return tuple(seen.values())


def dim_points(dims: dict, given: dict) -> list:
    """Every combination of the profiled dim values: `given` NAME -> [values]; a dim not given
    takes its min, opt and max when it is named 'batch', else its opt."""
    for name, values in given.items():
        if name not in dims:
            raise AitError(f"the spec has no dim '{name}'; its dims: {', '.join(dims) or 'none'}")
        for value in values:
            if not dims[name].contains(value):
                raise AitError(f"dim '{name}' = {value} is outside its range "
                               f"{dims[name].min}..{dims[name].max}")
    axes = []
    for name, rng in dims.items():
        if name in given:
            axes.append(sorted(set(given[name])))
        elif name == "batch":
            axes.append(sorted({rng.min, rng.opt, rng.max}))
        else:
            axes.append([rng.opt])
    return [dict(zip(dims, combo)) for combo in itertools.product(*axes)]


def collect(plan, points: list) -> tuple:
    """(jobs, notes) of an unfinalized plan (plan_model(tune=False)) at the dim points."""
    jobs: dict = {}
    notes = []
    seen = set()
    for group, call in tunables(plan):
        tunable = call.tunable
        if len(tunable.candidates) < 2:
            continue  # nothing to choose (float32's single 3xTF32 configuration)
        if not all(isinstance(v, int) for _, v in tunable.problem):
            notes.append(f"{tunable.family} {tunable.problem_text}: sizes besides the "
                         f"{'rows' if tunable.kind == 'gemm' else 'batch'} vary at run time; "
                         "not profiled (the heuristic runs it)")
            continue
        job = jobs.setdefault(group, Job(group, tunable, call.make))
        for point in points:
            values = tunable.static_values(point)
            extent = tunable.extent.eval(point)
            problem = Problem(tunable, extent, tuple(values.items()))
            if extent > 0 and problem.key not in seen:
                seen.add(problem.key)
                job.problems.append(problem)
    return [j for j in jobs.values() if j.problems], notes
