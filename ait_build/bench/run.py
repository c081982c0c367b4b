"""`ait-build bench`: median latency of a built model beside PyTorch eager and ONNX Runtime,
on the same inputs and weights.

Each side runs `warmup` times, then `runs` timed calls; the table shows medians. On cpu each side
runs in its own process, and the processes take turns of a few calls (ait_build/bench/sides.py);
`--in-process` times all sides in this process, taking turns call by call.
A clock per backend does the timing: perf_counter for cpu builds; cuda builds go to
ait_build/bench/cuda.py (CUDA events, one process, PyTorch eager, eager + CUDA graph and
torch.compile). Comparisons run only where their package is installed, and say "skipped: ..."
otherwise.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import yaml

from ait_build.backends import get_backend
from ait_build.bench import cuda as bench_cuda, sides as bench_sides
from ait_build.bench.competitors import COMPETITORS, Context, SIDES
from ait_build.build.invoke import build, resolve_spec, spec_name
from ait_build.codegen.emit import write_if_changed
from ait_build.errors import AitError
from ait_build.files.output import write_output
from ait_build.ir.resources import project_root
from ait_build.ops.reference import dim_values
from ait_build.pipeline import find_target
from ait_build.runtime import load_manifest
from ait_build.runtime.inputs import make_inputs
from ait_build.runtime.manifest import libraries_text
from ait_build.spec import float32_islands
from ait_build.spec.source import graph_digest
from ait_build.spec.model import load_model
from ait_build.spec.yamlfile import load_yaml, plain


class CpuClock:
    """Wall time of synchronous calls. The sides take turns, one call each per round, so load
    from other work on a shared machine falls on all of them alike."""

    name = "time.perf_counter"

    def measure(self, calls: dict, warmup: int, runs: int) -> dict:
        """name -> call with no arguments  =>  name -> list of seconds."""
        for _ in range(warmup):
            for fn in calls.values():
                fn()
        times: dict = {name: [] for name in calls}
        for _ in range(runs):
            for name, fn in calls.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
        return times


CLOCKS = {"host": CpuClock}  # by the device a build's tensors live on (cuda: bench/cuda.py)
CPU_RUNS, CPU_WARMUP = 20, 3


def stats(times: list, batch: int) -> dict:
    times = sorted(times)
    median = statistics.median(times)
    return {"median_ms": median * 1e3, "min_ms": times[0] * 1e3,
            "p90_ms": times[min(len(times) - 1, int(0.9 * len(times)))] * 1e3,
            "runs": len(times), "items_per_s": batch / median if median else 0.0}


def max_diff(ours: dict, theirs: dict) -> float:
    return max(float(np.max(np.abs(ours[k].astype(np.float32) - theirs[k]))) if ours[k].size else 0.0
               for k in theirs)


def rel_l2(ours: dict, theirs: dict) -> float:
    """||ours - theirs|| / ||theirs|| over all outputs together (float64 sums)."""
    num = sum(float(np.sum((ours[k].astype(np.float64) - np.asarray(theirs[k], np.float64)) ** 2))
              for k in theirs)
    den = sum(float(np.sum(np.asarray(theirs[k], np.float64) ** 2)) for k in theirs)
    return float(np.sqrt(num / den)) if den else float(np.sqrt(num))


# -- the command ----------------------------------------------------------------------------------
def dtype_variant(spec: str, dtype: str, root: str) -> str:
    """A copy of `spec` computing in `dtype` (named <name>_<dtype>), under build/specs/ with its
    includes and weights file made absolute: GPU specs are float16, cpu comparisons float32."""
    name = spec_name(spec)  # checked: it names the file written below
    doc = plain(load_yaml(spec))  # what yaml.safe_dump writes
    if doc.get("dtype", "float32") == dtype:
        return spec
    here = os.path.dirname(os.path.abspath(spec))  # includes and weights become absolute
    absolute = lambda p: p if os.path.isabs(p) else os.path.normpath(os.path.join(here, p))
    if "include" in doc:
        doc["include"] = [absolute(p) for p in ([doc["include"]] if isinstance(doc["include"], str)
                                                else doc["include"])]
    if isinstance(doc.get("weights"), str):
        doc["weights"] = absolute(doc["weights"])
    if isinstance(doc.get("source"), dict) and "file" in doc["source"]:  # an ONNX source
        doc["source"]["file"] = absolute(doc["source"]["file"])
    if isinstance(doc.get("weights"), dict) and "file" in doc["weights"]:  # with a source or not
        doc["weights"]["file"] = absolute(doc["weights"]["file"])
    if doc.get("dtype", "float32") == "float32":  # its explicit float32 parts stay float32
        unedited = isinstance(doc.get("source"), dict) and \
            doc["source"].get("graph_sha256") == graph_digest(doc)
        if float32_islands.add_casts(doc, load_model(spec), dtype) and unedited:
            doc["source"]["graph_sha256"] = graph_digest(doc)  # still the import's graph
    doc["dtype"], doc["name"] = dtype, f"{name}_{dtype}"
    path = os.path.join(root, "build", "specs", doc["name"] + ".yaml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = f"# {os.path.relpath(spec, root)} with dtype {dtype}, written by ait-build bench\n" + \
        yaml.safe_dump(doc, sort_keys=False)
    write_if_changed(path, text.encode())  # an unchanged variant keeps the build up to date
    return path


def time_sides(ctx, sides: list, inputs: dict, clock, warmup: int, runs: int) -> dict:
    """side -> {'times', 'outputs', ...} or {'skipped'}, all in this process, taking turns."""
    prepared = {name: SIDES[name](ctx, inputs) for name in sides}
    calls = {name: p.pop("call") for name, p in prepared.items() if "call" in p}
    for name, times in clock.measure(calls, warmup, runs).items():
        prepared[name]["times"] = times
    return prepared


def prebuilt_dir(spec: str, target: str) -> str:
    """build/TARGET/NAME of the spec, which must hold a library and its weights already."""
    name = load_model(spec).name
    folder = os.path.join(project_root(), "build", target, name)
    missing = [f for f in ("manifest.json", "weights.safetensors")
               if not os.path.isfile(os.path.join(folder, f))]
    if missing:
        raise AitError(f"--prebuilt: {os.path.relpath(folder)} has no {' or '.join(missing)}; build "
                       f"the spec for {target} first (`ait-build build {os.path.relpath(spec)} "
                       f"--target {target}`), here or on another machine")
    return folder


def run_bench(spec: str, target: str, batches: list, vs: list, runs: int | None,
              warmup: int | None, dims: dict, jobs: int | None = None, dtype: str | None = None,
              in_process: bool = False, compile_mode: str = "default", on_case=None,
              prebuilt: bool = False) -> dict:
    """The report; runs/warmup None: the backend's defaults. A cuda build is timed by
    bench_cuda.run_bench (compile_mode, and on_case(report) after each case). `prebuilt`: time
    the library already in build/TARGET/NAME (built on another machine) without SCons."""
    unknown = [v for v in vs if v not in COMPETITORS]
    if unknown:
        raise AitError(f"unknown --vs {', '.join(unknown)}; choose from {', '.join(COMPETITORS)}")
    spec = resolve_spec(spec)
    twin_name = spec_name(spec)
    on_device = get_backend(find_target(target, os.path.join(project_root(), "targets")).backend).device
    if on_device == "cuda":
        bench_cuda.check(vs)  # before a build that would be for nothing
    ranges = load_model(spec).dims  # every case's dims known and in range before the build
    for batch in batches:
        dim_values(ranges, dict(dims, **({"batch": batch} if "batch" in ranges else {})))
    if dtype:
        spec = dtype_variant(spec, dtype, project_root())
    build_dir = prebuilt_dir(spec, target) if prebuilt else build(spec, target, jobs=jobs)
    manifest = load_manifest(os.path.join(build_dir, "manifest.json"))
    if manifest.device == "cuda":
        report = bench_cuda.run_bench(Context(spec, twin_name, build_dir), manifest, target,
                                      batches, vs, runs, warmup, dims, compile_mode, on_case)
        return dict(report, build_dir=build_dir, spec=os.path.relpath(spec))
    runs = CPU_RUNS if runs is None else runs
    warmup = CPU_WARMUP if warmup is None else warmup
    clock = CLOCKS.get(manifest.device)
    if clock is None:
        raise AitError(f"bench has no clock for backend '{manifest.backend}' yet")
    clock = clock()
    ctx = Context(spec, twin_name, build_dir)
    report = {"spec": os.path.relpath(spec), "build_dir": build_dir, "model": manifest.name,
              "target": target, "libraries": manifest.libraries,
              "dtype": manifest.raw.get("dtype", ""), "clock": clock.name,
              "isolation": "in-process" if in_process else
              f"a process per side, turns of {bench_sides.TURN_RUNS} runs",
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": sys.version.split()[0],
                          "loadavg_before": os.getloadavg()},  # other work skews timings
              "runs": runs, "warmup": warmup, "results": []}
    try:
        for batch in batches:
            case = dict(dims, **({"batch": batch} if "batch" in manifest.dim_names else {}))
            inputs = make_inputs(manifest, ctx.graph, case, seed=0)
            sides = ["ait_build"] + vs
            got = time_sides(ctx, sides, inputs, clock, warmup, runs) if in_process else \
                bench_sides.time_sides_in_processes(ctx, sides, inputs, warmup, runs)
            mine = got["ait_build"]
            ours = mine.pop("outputs")
            mine.update(stats(mine.pop("times"), batch))
            row = {"dims": case, "ait_build": mine}
            for name in vs:
                side = got[name]
                if "times" in side:
                    side.update(stats(side.pop("times"), batch))
                    theirs = side.pop("outputs")
                    side["max_abs_diff"] = max_diff(ours, theirs)
                    side["rel_l2"] = rel_l2(ours, theirs)  # of a float16 model: its error
                    side["ratio"] = row["ait_build"]["median_ms"] / side["median_ms"]
                row[name] = side
            report["results"].append(row)
    finally:
        ctx.close()
    report["machine"]["loadavg_after"] = os.getloadavg()
    return report


def table(report: dict, vs: list) -> str:
    head = ["dims", "ait-build ms"]
    for name in vs:
        head += [f"{name} ms", f"ours/{name}", "max|diff|", "rel L2"]
    rows, notes = [], {}
    for r in report["results"]:
        row = [",".join(f"{k}={v}" for k, v in r["dims"].items()) or "-", f"{r['ait_build']['median_ms']:.3f}"]
        for name in vs:
            e = r[name]
            # rel L2 besides max|diff|: a model whose outputs are tiny (random weights) has a
            # tiny max|diff| whatever its error
            row += ["skipped", "", "", ""] if "skipped" in e else \
                [f"{e['median_ms']:.3f}", f"{e['ratio']:.2f}", f"{e['max_abs_diff']:.2g}",
                 f"{e['rel_l2']:.2g}" if "rel_l2" in e else ""]
            if e.get("skipped") or e.get("note"):  # one line each, under the table
                notes.setdefault(f"{name}: {e.get('skipped') or e.get('note')}")
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    load = report["machine"].get("loadavg_before", (0.0,))[0]
    libraries = libraries_text(report.get("libraries", {}))  # the cpu BLAS: whichever is installed
    title = (f"{report['model']} on {report['target']}" + (f" with {libraries}" if libraries else "")
             + f" ({report['machine']['cpus']} cpus, load {load:.1f}), median of {report['runs']} "
             f"runs after {report['warmup']} warm-up ({report['clock']})")
    return "\n".join([title, line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
                     + [line(r) for r in rows] + list(notes))


def write_json(report: dict, path: str | None) -> None:
    """The report as JSON (cuda runs write it after every case: a run cut short keeps its
    finished cases)."""
    if not path:
        return
    write_output(path, json.dumps(report, indent=2, sort_keys=True).encode())
