"""`ait-build bench`: median latency of a built model beside PyTorch eager and ONNX Runtime,
on the same inputs and weights, in one process.

Each side runs `warmup` times, then `runs` timed calls, the sides taking turns; the table shows
medians. A clock per backend does the timing: perf_counter for cpu builds (a CUDA-events clock
slots in beside it).
Comparisons run only where their package is installed, and say "skipped: ..." otherwise.
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


def stats(times: list, batch: int) -> dict:
    times = sorted(times)
    median = statistics.median(times)
    return {"median_ms": median * 1e3, "min_ms": times[0] * 1e3,
            "p90_ms": times[min(len(times) - 1, int(0.9 * len(times)))] * 1e3,
            "runs": len(times), "items_per_s": batch / median if median else 0.0}


def max_diff(ours: dict, theirs: dict) -> float:
    return max(float(np.max(np.abs(ours[k].astype(np.float32) - theirs[k]))) if ours[k].size else 0.0
               for k in theirs)


# -- the competitors ------------------------------------------------------------------------------
def _missing(*packages) -> str:
    for package in packages:
        if importlib.util.find_spec(package) is None:
            return f"skipped: {package} not installed"
    return ""


def prepare_torch(ctx, inputs) -> dict:
    """PyTorch eager on the twin: {'call', 'outputs', ...} or {'skipped': why}."""
    skip = _missing("torch")
    if skip:
        return {"skipped": skip}
    import torch
    twin = ctx.twin()
    args = twin.to_args(inputs)

    def call():
        with torch.inference_mode():
            return twin.module(*args)

    outputs = {n: t.float().numpy() for n, t in zip(twin.outputs, call())}
    return {"call": call, "outputs": outputs, "threads": torch.get_num_threads(),
            "version": torch.__version__}


def prepare_onnxruntime(ctx, inputs) -> dict:
    """ONNX Runtime on the twin exported with torch.onnx.export (static shapes)."""
    skip = _missing("torch", "onnxruntime", "onnx")
    if skip:
        return {"skipped": skip}
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
            return {"skipped": f"skipped: torch.onnx.export failed ({type(exc).__name__}: {exc})"}
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
    call = lambda: session.run(None, feed)
    return {"call": call, "outputs": dict(zip(twin.outputs, call())), "version": ort.__version__}


COMPETITORS = {"torch": prepare_torch, "onnxruntime": prepare_onnxruntime}


class Context:
    """What the competitors share for one spec: its graph and, built once, the PyTorch twin."""

    def __init__(self, graph, twin_name: str):
        self.graph = graph
        self.twin_name = twin_name
        self._twin = None

    def twin(self):
        if self._twin is None:
            from ait_build.bench_models import torch_twin
            self._twin = torch_twin(self.graph, self.twin_name)
        return self._twin


# -- the command ----------------------------------------------------------------------------------
def dtype_variant(spec: str, dtype: str, root: str) -> str:
    """A copy of `spec` computing in `dtype` (named <name>_<dtype>), under build/specs/ with its
    includes and weights file made absolute: GPU specs are float16, cpu comparisons float32."""
    import yaml
    with open(spec, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    if doc.get("dtype", "float32") == dtype:
        return spec
    here = os.path.dirname(spec)
    absolute = lambda p: p if os.path.isabs(p) else os.path.normpath(os.path.join(here, p))
    if "include" in doc:
        doc["include"] = [absolute(p) for p in ([doc["include"]] if isinstance(doc["include"], str)
                                                else doc["include"])]
    if isinstance(doc.get("weights"), str):
        doc["weights"] = absolute(doc["weights"])
    elif isinstance(doc.get("weights"), dict) and "file" in doc["weights"]:
        doc["weights"]["file"] = absolute(doc["weights"]["file"])
    doc["dtype"], doc["name"] = dtype, f"{doc['name']}_{dtype}"
    path = os.path.join(root, "build", "specs", doc["name"] + ".yaml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = f"# {os.path.relpath(spec, root)} with dtype {dtype}, written by ait-build bench\n" + \
        yaml.safe_dump(doc, sort_keys=False)
    from ait_build.codegen.emit import write_if_changed
    write_if_changed(path, text.encode())  # an unchanged variant keeps the build up to date
    return path


def run_bench(spec: str, target: str, batches: list, vs: list, runs: int, warmup: int,
              dims: dict, jobs: int | None = None, dtype: str | None = None) -> dict:
    from ait_build.build_cli import build, make_inputs, project_root, resolve_spec, spec_name
    from ait_build.runtime import Model
    from ait_build.spec.model import load_model
    unknown = [v for v in vs if v not in COMPETITORS]
    if unknown:
        raise AitError(f"unknown --vs {', '.join(unknown)}; choose from {', '.join(COMPETITORS)}")
    spec = resolve_spec(spec)
    twin_name = spec_name(spec)
    if dtype:
        spec = dtype_variant(spec, dtype, project_root())
    build_dir = build(spec, target, jobs=jobs)
    graph = load_model(spec)
    ctx = Context(graph, twin_name)
    report = {"spec": os.path.relpath(spec), "model": graph.name, "target": target,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": sys.version.split()[0],
                          "loadavg_before": os.getloadavg()},  # other work skews timings
              "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")},
              "runs": runs, "warmup": warmup, "results": []}
    with Model(build_dir) as model:
        clock = CLOCKS.get(model.manifest.backend)
        if clock is None:
            raise AitError(f"bench has no clock for backend '{model.manifest.backend}' yet")
        clock = clock()
        report["clock"] = clock.name
        report["dtype"] = model.manifest.raw.get("dtype", "")
        for batch in batches:
            case = dict(dims, **({"batch": batch} if "batch" in model.manifest.dim_names else {}))
            inputs = make_inputs(model.manifest, graph, case, seed=0)
            ours = model.run(inputs)
            sides = {name: COMPETITORS[name](ctx, inputs) for name in vs}
            calls = {"ait_build": lambda: model.run(inputs)}
            calls.update({name: side.pop("call") for name, side in sides.items() if "call" in side})
            times = clock.measure(calls, warmup, runs)
            row = {"dims": case, "ait_build": stats(times["ait_build"], batch)}
            for name, side in sides.items():
                if name in times:
                    entry = stats(times[name], batch)
                    entry["max_abs_diff"] = max_diff(ours, side.pop("outputs"))
                    entry["ratio"] = row["ait_build"]["median_ms"] / entry["median_ms"]
                    side.update(entry)
                row[name] = side
            report["results"].append(row)
    report["machine"]["loadavg_after"] = os.getloadavg()
    return report


def table(report: dict, vs: list) -> str:
    head = ["dims", "ait-build ms"]
    for name in vs:
        head += [f"{name} ms", f"ours/{name}", "max|diff|"]
    rows = []
    for r in report["results"]:
        row = [",".join(f"{k}={v}" for k, v in r["dims"].items()) or "-", f"{r['ait_build']['median_ms']:.3f}"]
        for name in vs:
            e = r[name]
            row += [e["skipped"], "", ""] if "skipped" in e else \
                [f"{e['median_ms']:.3f}", f"{e['ratio']:.2f}", f"{e['max_abs_diff']:.2g}"]
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    load = report["machine"].get("loadavg_before", (0.0,))[0]
    title = (f"{report['model']} on {report['target']} ({report['machine']['cpus']} cpus, load "
             f"{load:.1f}), median of {report['runs']} runs after {report['warmup']} warm-up "
             f"({report['clock']})")
    return "\n".join([title, line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
                     + [line(r) for r in rows])


def cmd_bench(args) -> int:
    from ait_build.cli import _parse_dims
    # Every side here uses OpenMP (ours and PyTorch's libgomp). Idle OpenMP threads sleep by
    # default, and on small VMs waking them costs milliseconds per parallel region (8 ms each on
    # our 2-core machine: PyTorch's ResNet-50 ran 260 ms instead of 90). Spinning threads time the
    # kernels, not the scheduler. It must be set before libgomp loads; the user's value wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")
    batches = [int(b) for b in args.batch.split(",") if b.strip()]
    vs = [v.strip() for v in (args.vs or "").split(",") if v.strip()]
    report = run_bench(args.spec, args.target, batches, vs, args.runs, args.warmup,
                       _parse_dims(args.dim), args.jobs, args.dtype)
    print(table(report, vs))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2, sort_keys=True)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser("bench", help="time a model beside PyTorch and ONNX Runtime")
    p.add_argument("spec", help="spec file, or a model name under specs/")
    p.add_argument("--target", default="cpu")
    p.add_argument("--batch", default="1", help="comma-separated batch sizes (default: 1)")
    p.add_argument("--dim", action="append", help="NAME=VALUE for other dims (default: opt)")
    p.add_argument("--vs", default="", help="comma list from: " + ", ".join(COMPETITORS))
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"],
                   help="build a copy of the spec with this dtype (e.g. float32 on cpu)")
    p.add_argument("--runs", type=int, default=20, help="timed runs per case (default: 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs first (default: 3)")
    p.add_argument("-j", "--jobs", type=int, help="parallel compile jobs when building")
    p.add_argument("--json", help="write the results to this file")
    p.set_defaults(func=cmd_bench)
