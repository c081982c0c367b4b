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

import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

from ait_build.errors import AitError


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


CLOCKS = {"cpu": CpuClock}
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


# -- the competitors ------------------------------------------------------------------------------
def _missing(*packages) -> str:
    for package in packages:
        if importlib.util.find_spec(package) is None:
            return f"skipped: {package} not installed"
    return ""


def prepare_torch(ctx, inputs) -> dict:
    """PyTorch eager on the spec's source module or twin: {'call', 'outputs', ...} or
    {'skipped': why}."""
    skip = _missing("torch")
    if skip:
        return {"skipped": skip}
    import torch
    from ait_build.bench.source_twin import NoComparison
    try:
        twin = ctx.twin()
        args = twin.to_args(inputs)

        def call():
            with torch.inference_mode():
                return twin.module(*args)

        outputs = {n: t.float().numpy() for n, t in zip(twin.outputs, call())}
    except NoComparison as exc:
        return {"skipped": str(exc)}
    return _noted({"call": call, "outputs": outputs, "threads": torch.get_num_threads(),
                   "version": torch.__version__}, twin.note)


def prepare_onnxruntime(ctx, inputs) -> dict:
    """ONNX Runtime on the spec's ONNX source file, or on its PyTorch source module or twin
    exported with torch.onnx.export (static shapes)."""
    skip = _missing("onnxruntime", "onnx")
    if skip:
        return {"skipped": skip}
    import onnxruntime as ort
    from ait_build.bench.source_twin import NoComparison, onnx_feed, onnx_model, source_layouts
    try:
        from_file = onnx_model(ctx.spec, ctx.graph, ctx.twin_name)
        if from_file is not None:
            model, note = from_file
            session = ort.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
            feed = onnx_feed(session, inputs, ctx.graph, source_layouts(ctx.spec))
            names = list(ctx.graph.outputs)
        else:
            skip = _missing("torch")
            if skip:
                return {"skipped": skip}
            session, feed, names, note = _exported_session(ctx, inputs)
    except NoComparison as exc:
        return {"skipped": str(exc)}
    if isinstance(session, dict):  # the export failed
        return session
    call = lambda: session.run(None, feed)
    return _noted({"call": call, "outputs": dict(zip(names, call())), "version": ort.__version__},
                  note)


def _exported_session(ctx, inputs) -> tuple:
    """(session, feed, output names, note) of the twin exported with torch.onnx.export, or
    ({'skipped': why}, ...) when the export fails."""
    import onnxruntime as ort
    import torch
    twin = ctx.twin()
    args = twin.to_args(inputs)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        try:
            with warnings.catch_warnings():  # tracer warnings about the twins' Python control flow
                warnings.simplefilter("ignore")
                torch.onnx.export(twin.module, args, path, input_names=list(twin.input_names),
                                  output_names=list(twin.outputs), dynamo=False)
        except Exception as exc:  # the exporter's failures are many and version-specific
            why = f"skipped: torch.onnx.export failed ({type(exc).__name__}: {exc})"
            return {"skipped": why}, None, None, ""
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
    return session, feed, list(twin.outputs), twin.note


def _noted(side: dict, note: str) -> dict:
    if note:
        side["note"] = note
    return side


def prepare_ours(ctx, inputs) -> dict:
    model = ctx.model()
    call = lambda: model.run(inputs)
    return {"call": call, "outputs": call()}


COMPETITORS = {"torch": prepare_torch, "onnxruntime": prepare_onnxruntime}
SIDES = dict(ait_build=prepare_ours, **COMPETITORS)


class Context:
    """What the sides share for one spec: its graph, the built model and the PyTorch twin, each
    made on first use (a side process loads only what it needs)."""

    def __init__(self, spec: str, twin_name: str, build_dir: str, graph=None):
        self.spec, self.twin_name, self.build_dir = spec, twin_name, build_dir
        self._graph, self._model, self._twin = graph, None, None

    @property
    def graph(self):
        if self._graph is None:
            from ait_build.spec.model import load_model
            self._graph = load_model(self.spec)
        return self._graph

    def model(self):
        if self._model is None:
            from ait_build.runtime import Model
            self._model = Model(self.build_dir)
        return self._model

    def close(self) -> None:
        if self._model is not None:
            self._model.close()

    def twin(self):
        """The PyTorch module to compare with (source_twin.py); NoComparison says why not."""
        if self._twin is None:
            from ait_build.bench.source_twin import comparison_twin
            self._twin = comparison_twin(self.spec, self.graph, self.twin_name)
        return self._twin


# -- the command ----------------------------------------------------------------------------------
def dtype_variant(spec: str, dtype: str, root: str) -> str:
    """A copy of `spec` computing in `dtype` (named <name>_<dtype>), under build/specs/ with its
    includes and weights file made absolute: GPU specs are float16, cpu comparisons float32."""
    import yaml
    from ait_build.cli.build import spec_name
    from ait_build.spec.yamlfile import load_yaml, plain
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
    elif isinstance(doc.get("weights"), dict) and "file" in doc["weights"]:
        doc["weights"]["file"] = absolute(doc["weights"]["file"])
    doc["dtype"], doc["name"] = dtype, f"{name}_{dtype}"
    path = os.path.join(root, "build", "specs", doc["name"] + ".yaml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = f"# {os.path.relpath(spec, root)} with dtype {dtype}, written by ait-build bench\n" + \
        yaml.safe_dump(doc, sort_keys=False)
    from ait_build.codegen.emit import write_if_changed
    write_if_changed(path, text.encode())  # an unchanged variant keeps the build up to date
    return path


def time_sides(ctx, sides: list, inputs: dict, clock, warmup: int, runs: int) -> dict:
    """side -> {'times', 'outputs', ...} or {'skipped'}, all in this process, taking turns."""
    prepared = {name: SIDES[name](ctx, inputs) for name in sides}
    calls = {name: p.pop("call") for name, p in prepared.items() if "call" in p}
    for name, times in clock.measure(calls, warmup, runs).items():
        prepared[name]["times"] = times
    return prepared


def run_bench(spec: str, target: str, batches: list, vs: list, runs: int | None,
              warmup: int | None, dims: dict, jobs: int | None = None, dtype: str | None = None,
              in_process: bool = False, compile_mode: str = "default", on_case=None) -> dict:
    """The report; runs/warmup None: the backend's defaults. A cuda build is timed by
    bench_cuda.run_bench (compile_mode, and on_case(report) after each case)."""
    from ait_build.bench import cuda as bench_cuda, sides as bench_sides
    from ait_build.backends import get_backend
    from ait_build.cli.build import build, make_inputs, project_root, resolve_spec, spec_name
    from ait_build.runtime import load_manifest
    from ait_build.spec.target import find_target
    unknown = [v for v in vs if v not in COMPETITORS]
    if unknown:
        raise AitError(f"unknown --vs {', '.join(unknown)}; choose from {', '.join(COMPETITORS)}")
    spec = resolve_spec(spec)
    twin_name = spec_name(spec)
    on_device = get_backend(find_target(target, os.path.join(project_root(), "targets")).backend).device
    if on_device == "cuda":
        bench_cuda.check(vs)  # before a build that would be for nothing
    if dtype:
        spec = dtype_variant(spec, dtype, project_root())
    build_dir = build(spec, target, jobs=jobs)
    manifest = load_manifest(os.path.join(build_dir, "manifest.json"))
    if manifest.device == "cuda":
        report = bench_cuda.run_bench(Context(spec, twin_name, build_dir), manifest, target,
                                      batches, vs, runs, warmup, dims, compile_mode, on_case)
        return dict(report, build_dir=build_dir, spec=os.path.relpath(spec))
    runs = CPU_RUNS if runs is None else runs
    warmup = CPU_WARMUP if warmup is None else warmup
    clock = CLOCKS.get(manifest.backend)
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
        head += [f"{name} ms", f"ours/{name}", "max|diff|"]
    rows, notes = [], {}
    for r in report["results"]:
        row = [",".join(f"{k}={v}" for k, v in r["dims"].items()) or "-", f"{r['ait_build']['median_ms']:.3f}"]
        for name in vs:
            e = r[name]
            row += ["skipped", "", ""] if "skipped" in e else \
                [f"{e['median_ms']:.3f}", f"{e['ratio']:.2f}", f"{e['max_abs_diff']:.2g}"]
            if e.get("skipped") or e.get("note"):  # one line each, under the table
                notes.setdefault(f"{name}: {e.get('skipped') or e.get('note')}")
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    load = report["machine"].get("loadavg_before", (0.0,))[0]
    from ait_build.runtime.manifest import libraries_text
    libraries = libraries_text(report.get("libraries", {}))  # the cpu BLAS: whichever is installed
    title = (f"{report['model']} on {report['target']}" + (f" with {libraries}" if libraries else "")
             + f" ({report['machine']['cpus']} cpus, load {load:.1f}), median of {report['runs']} "
             f"runs after {report['warmup']} warm-up ({report['clock']})")
    return "\n".join([title, line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
                     + [line(r) for r in rows] + list(notes))


def cmd_bench(args) -> int:
    from ait_build.cli.args import dims_of
    batches = args.batch
    vs = [v.strip() for v in (args.vs or "").split(",") if v.strip()]
    report = run_bench(args.spec, args.target, batches, vs, args.runs, args.warmup,
                       dims_of(args.dim), args.jobs, args.dtype, args.in_process,
                       args.compile_mode, on_case=lambda r: write_json(r, args.json))
    from ait_build.bench import cuda as bench_cuda
    if report.get("clock") == bench_cuda.CLOCK:  # timed on a CUDA device: its own table
        print(bench_cuda.table(report))
    else:
        print(table(report, vs))
    if args.steps:
        from ait_build.bench import steps as bench_steps
        bench_steps.add_to(report, args.target)
    if args.json:
        write_json(report, args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def write_json(report: dict, path: str | None) -> None:
    """The report as JSON (cuda runs write it after every case: a run cut short keeps its
    finished cases)."""
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2, sort_keys=True)


def register(sub) -> None:
    from ait_build.cli.args import dim_value, nonnegative_int, positive_int, positive_int_list
    from ait_build.bench.cuda import (COMPILE_MODES, DEFAULT_RUNS, DEFAULT_WARMUP, LARGE_ROWS,
                                      LARGE_RUNS, LARGE_WARMUP)
    from ait_build.cli.main import add_command
    p = add_command(
        sub, "bench", "time a model beside PyTorch and ONNX Runtime",
        "Time a built model beside PyTorch (and ONNX Runtime on cpu): the model an imported "
        "spec's `source:` names, or a zoo spec's twin, with the spec's weights. On cpu: "
        "perf_counter, each side in its own process, the sides taking turns of a few calls. "
        "On a cuda target (a100, h100, h200): CUDA "
        "events in one process, our library with and without its CUDA graphs against PyTorch "
        "eager, eager captured in a CUDA graph and torch.compile (--vs torch); a case with more "
        f"than {LARGE_ROWS} rows (the product of its dims, batch x seq) runs at most "
        f"{LARGE_RUNS} timed calls after at most {LARGE_WARMUP} untimed ones.",
        ["ait-build bench resnet50 --target cpu --dtype float32 --vs torch,onnxruntime",
         "ait-build bench specs/cnn.yaml --vs torch,onnxruntime   # imported: vs its source",
         "ait-build bench bert_base --target h200 --batch 1,128 --vs torch --json bert.json"])
    p.add_argument("spec", help="spec file, or a model name under specs/, e.g. mlp")
    p.add_argument("--target", default="cpu", help="a name from `ait-build targets` (default: "
                   "cpu), e.g. --target h200")
    p.add_argument("--batch", default=[1], type=positive_int_list,
                   help="comma-separated batch sizes (default: 1), e.g. --batch 1,32")
    p.add_argument("--dim", action="append", type=dim_value, metavar="NAME=VALUE",
                   help="other dims (default: opt), e.g. --dim seq=128")
    p.add_argument("--vs", default="", help="comma list from: " + ", ".join(COMPETITORS)
                   + " (cuda targets: torch), e.g. --vs torch")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"],
                   help="build a copy of the spec with this dtype (e.g. float32 on cpu)")
    p.add_argument("--runs", type=positive_int, help=f"timed runs per case (default: {CPU_RUNS} on cpu, "
                   f"{DEFAULT_RUNS} on cuda, at most {LARGE_RUNS} for large cuda cases)")
    p.add_argument("--warmup", type=nonnegative_int, help=f"untimed runs first (default: {CPU_WARMUP} on "
                   f"cpu, {DEFAULT_WARMUP} on cuda, at most {LARGE_WARMUP} for large cuda cases)")
    p.add_argument("--compile-mode", default="default", choices=COMPILE_MODES,
                   help="cuda: torch.compile's mode (default: default; none leaves it out)")
    p.add_argument("--in-process", action="store_true",
                   help="cpu: time every side in this process, taking turns (default: a process "
                   "each; cuda always times in one process)")
    p.add_argument("-j", "--jobs", type=positive_int, help="parallel compile jobs when building, "
                   "e.g. -j 2")
    p.add_argument("--steps", action="store_true",
                   help="then time each kernel call of every case and print where the time goes, "
                   "per graph node (with TFLOP/s and GB/s)")
    p.add_argument("--json", metavar="FILE", help="write the results to this file")
    p.set_defaults(func=cmd_bench)

