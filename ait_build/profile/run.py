"""`ait-build profile SPEC... --target T` (its arguments: cli/profile.py): compile every
candidate configuration of the specs' GEMMs and convs, time them on the GPU, and merge the
winners into the target's profile file."""

from __future__ import annotations

import json
import os
import sys
import time

from ait_build.backends import get_backend
from ait_build.build.invoke import resolve_spec, run_scons
from ait_build.codegen.emit import write_if_changed
from ait_build.errors import AitError
from ait_build.files.output import check_output
from ait_build.files.read import read_bytes
from ait_build.ir.resources import project_root
from ait_build.pipeline import build_plan, find_target
from ait_build.profile.harness import render_harness
from ait_build.profile.jobs import collect, dim_points
from ait_build.profile.measure import Journal, measure
from ait_build.profile.report import choose, summary_lines
from ait_build.spec.profile import adopt_stock_profile, read_entries, write_profile


def parse_values(text: str, what: str) -> list:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise AitError(f"{what} takes comma-separated integers, got '{text}'") from None
    if not values or any(v < 1 for v in values):
        raise AitError(f"{what} takes positive integers, got '{text}'")
    return values


def requested_dims(args) -> dict:
    given = {}
    if args.batch:
        given["batch"] = parse_values(args.batch, "--batch")
    for item in args.dim or []:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise AitError(f"--dim takes NAME=VALUE[,VALUE...], got '{item}'")
        given[name] = parse_values(text, f"--dim {name}")
    return given


def gather_jobs(specs: list, target, given: dict, echo) -> list:
    """The specs' jobs, merged by kernel group (the same kernel in several specs is one job)."""
    merged: dict = {}
    backend = None
    used = set()
    for spec in specs:
        plan = build_plan(resolve_spec(spec, target_root(target)), target, tune=False)
        backend = plan.backend
        mine = {k: v for k, v in given.items() if k in plan.graph.dims}  # --dim seq: the specs with seq
        used |= set(mine)
        jobs, notes = collect(plan, dim_points(plan.graph.dims, mine))
        for note in notes:
            echo(f"note: {plan.name}: {note}")
        for job in jobs:
            known = merged.setdefault(job.group, job)
            if known is not job:
                keys = {p.key for p in known.problems}
                known.problems += [p for p in job.problems if p.key not in keys]
    unused = sorted(set(given) - used)
    if unused:
        raise AitError(f"no spec given has a dim '{unused[0]}'")
    return list(merged.values()), backend


def target_root(target) -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(target.source)))


def compile_harnesses(harnesses: list, target, root: str, args, echo) -> float:
    """SCons builds every harness (parallel, cached); returns the seconds it took."""
    folder = os.path.join(root, "build", target.name, "profile")
    listing = os.path.join(folder, "harnesses.json")
    with open(listing, "w", encoding="utf-8") as fh:
        json.dump({"target": os.path.abspath(target.source), "harnesses": [
            {"group": h.group, "folder": os.path.relpath(h.folder, root), "sources": list(h.sources),
             "program": h.program} for h in harnesses]}, fh, indent=1)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sconstruct.py")
    cmd = [sys.executable, "-m", "SCons", "-Q", "-f", script, "-C", root, f"listing={listing}"]
    if args.jobs:
        cmd.append(f"-j{args.jobs}")
    if args.cache is not None:
        cmd.append(f"cache={args.cache}")
    start = time.monotonic()
    echo(f"compiling {len(harnesses)} harnesses ({sum(len(h.sources) for h in harnesses)} sources)")
    proc = run_scons(cmd)
    if proc.returncode:
        raise AitError("compiling the profiling harnesses failed:\n" + proc.stderr.strip()[-4000:])
    return time.monotonic() - start


DIGEST = "harness.digest"


def check_built(harnesses: list) -> None:
    """--measure-only: each program must exist and come from the sources rendered now."""
    for h in harnesses:
        try:
            built = read_bytes(os.path.join(h.folder, DIGEST)).decode("ascii", "replace").strip()
        except OSError:
            built = ""
        if built != h.digest or not os.path.isfile(os.path.join(h.folder, h.program)):
            raise AitError(f"--measure-only: the harness of {h.group} is missing or was built from "
                           f"other sources; run `ait-build profile ... --compile-only` first")


def run_profile(args) -> int:
    """The whole command, on its parsed arguments (cli/profile.py)."""
    root = project_root()
    if args.output:  # before the work, not after it
        check_output(args.output, inputs=args.spec, make_folder=True)
    target = find_target(args.target, os.path.join(root, "targets"))
    if not get_backend(target.backend).profile_driver:
        raise AitError(f"target '{target.name}' has the {target.backend} backend, whose kernels "
                       "have no configurations to profile")
    echo = print
    start = time.monotonic()
    jobs, backend = gather_jobs(args.spec, target, requested_dims(args), echo)
    if args.kernels:  # re-profile some families (the profile file keeps the others' entries)
        jobs = [j for j in jobs if any(k in j.family for k in args.kernels)]
    if not jobs:
        echo("nothing to profile: no GEMM or conv with several candidate configurations")
        return 0
    out = os.path.join(root, "build", target.name, "profile")
    harnesses = [render_harness(job, backend, os.path.join(out, job.group)) for job in jobs]
    if args.measure_only:
        compile_s = 0.0
        check_built(harnesses)
    else:
        compile_s = compile_harnesses(harnesses, target, root, args, echo)
        for h in harnesses:  # what the programs were built from, for --measure-only elsewhere
            write_if_changed(os.path.join(h.folder, DIGEST), h.digest.encode())
    problems = sum(len(j.problems) for j in jobs)
    echo(f"compiled in {compile_s:.0f} s: {len(jobs)} kernels, {problems} problems, "
         f"{sum(len(h.candidates) for h in harnesses)} configurations")
    if args.compile_only:
        return 0
    path = args.output or adopt_stock_profile(target, root, echo)
    journal_path = os.path.join(out, "journal.jsonl")
    if args.fresh and os.path.exists(journal_path):
        os.remove(journal_path)
    journal = Journal.load(journal_path)
    entries, measured_on = read_entries(path)
    device: dict = {}
    chosen = []
    for i, (job, harness) in enumerate(zip(jobs, harnesses), 1):
        echo(f"[{i}/{len(jobs)}] {job.family}: {len(job.problems)} problems x up to "
             f"{len(harness.candidates)} configurations")
        results = measure(harness, job.problems, journal, device, echo)
        for problem in job.problems:
            pick = choose(problem, results.get(problem.key, {}))
            chosen.append((problem, pick))
            if pick.entry:
                entries[problem.key] = pick.entry
            echo(f"  {problem.describe()}: {pick.line()}")
        if device:  # else every result came from the journal: the file's own line stands
            measured_on = f"{device['device']} ({device.get('sm_count', '?')} SMs)"
            warn_other_device(target, device, echo)
        write_profile(path, target.name, measured_on, entries)  # after each kernel: resumable
    for line in summary_lines(chosen, time.monotonic() - start, compile_s):
        echo(line)
    shown = os.path.relpath(path, root)
    echo(f"wrote {path if shown.startswith('..') else shown}")
    return 0


def warn_other_device(target, device: dict, echo) -> None:
    """Say once when the GPU measuring is not the one the target file describes (an a100
    profile measured on an H200, say): its winners may not be the target's."""
    want, have = target.fact("sm_count"), device.get("sm_count")
    if want and have and want != have and not device.get("warned"):
        device["warned"] = True
        echo(f"note: measuring on {device['device']} with {have} SMs; target '{target.name}' "
             f"records {want} (device.sm_count): the winners are this GPU's, not necessarily "
             f"the target's")
