"""The public real-model benchmark: torchvision and transformers models at their published sizes,
imported with `ait-build import torch`, built for a GPU target and timed with `ait-build bench
--vs torch` against PyTorch's best mode of the same run (docs/benchmarks.md).

    python3 -m ait_build.bench.zoo [--quick] [--models a,b] [--batch 1,128] [--seq 128]
                                   [--no-compile] [--steps import,build,bench] [--budget S]
                                   [--out DIR] [--set public|outside]

`--set outside` runs zoo_specs.OUTSIDE instead of the public models: models nothing of ours was
tuned for (a Mixtral-shaped MoE, LLaMA- and Qwen2-shaped decoders, audio and vision encoders,
CNNs), to find what is slow on the models users bring.

Steps, each optional (`--steps`):
- import: each model (zoo_specs.ZOO) with `ait-build import torch ... --dtype float16` into
  build/zoo/NAME.yaml, in parallel processes; then its weights become `{random: {seed: 0}}`
  (and a small NAME.constants.safetensors for the tensors the import computed, which random
  values would break: Swin's index tables and shift masks, T5's position buckets), so that
  no large file is kept or carried. A spec already there from the same source is kept: imports
  can be made ahead of time on another machine and build/zoo carried.
- render: the generated sources for the target without compiling (a check on a machine
  without the GPU toolchain).
- build: one parallel SCons run over every spec, through build/cache.
- weights: each built library's weights file written again (random, from the spec's seed) and
  checked against its manifest: for libraries built elsewhere and copied without their weights
  (with `--prebuilt`, the GPU machine then needs no toolchain).
- bench: `ait-build bench SPEC --target T --vs torch` per model (and seq), each in its own
  process: our library with and without CUDA graphs, PyTorch eager, eager + CUDA graph and
  torch.compile (`auto`: reduce-overhead at batch 1, default above; `--no-compile` leaves it
  out and the table says so), and each float16 output's relative L2 error against PyTorch in
  float32, beside PyTorch float16's own.

Everything lands in --out: zoo.json (every figure, rewritten after each model), zoo.md (the
table), zoo.log (progress), import.log and build.log. `--budget` stops starting work when the
time is spent, so that one call of a limited machine ends with what it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ait_build.bench.zoo_specs import (BY_NAME, QUICK, SETS, ZOO_DIR, ZooModel, import_one,
                                       imported_already, spec_path)
from ait_build.bench.zoo_table import markdown, summary_rows

STEPS = ("import", "render", "build", "weights", "bench")


def import_all(models: list, jobs: int, deadline: float, log, progress) -> dict:
    """name -> {'ok', 'seconds', 'kept'}: imports the models not imported already, `jobs` at
    once, each in a process of its own."""
    results = {}

    def run(model):
        if imported_already(model):
            return model.name, {"ok": True, "seconds": 0.0, "kept": True}
        start = time.time()
        code, lines = run_limited([sys.executable, "-m", "ait_build.bench.zoo", "--import-one",
                                   model.name], deadline)
        return model.name, {"ok": code == 0, "seconds": time.time() - start,
                            "output": "\n".join(lines)[-3000:]}

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, result in pool.map(run, models):
            results[name] = result
            log.write(f"== {name}: {'ok' if result['ok'] else 'FAILED'} "
                      f"({result['seconds']:.0f} s)\n{result.get('output', '')}\n")
            log.flush()
            state = "kept" if result.get("kept") else f"{result['seconds']:.0f} s"
            progress(f"import {name}: {'ok' if result['ok'] else 'FAILED'} ({state})"
                     + ("" if result["ok"] else ": " + _last_line(result["output"].splitlines())))
    return results


def run_limited(cmd: list, deadline: float, on_line=None) -> tuple:
    """(exit code or 'timeout', output lines) of `cmd` in a process group of its own, killed with
    everything it started (nvcc, torch.compile's workers) at `deadline`; on_line(line) as the
    lines come."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    killed = []

    def kill():
        killed.append(True)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = None
    if deadline != float("inf"):
        timer = threading.Timer(max(1.0, deadline - time.time()), kill)
        timer.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if on_line:
                on_line(lines[-1])
        code = proc.wait()
    finally:
        if timer:
            timer.cancel()
    return ("timeout" if killed else code), lines


def _last_line(lines: list) -> str:
    """The last non-empty line of a process's output (the error, when it failed)."""
    lines = [l for l in lines if l.strip()]
    return lines[-1].strip()[:300] if lines else ""


# -- render, build --------------------------------------------------------------------------------
def render_all(models: list, target: str, progress) -> dict:
    """name -> {'ok', 'sources', 'error'}: the generated sources, not compiled."""
    import tempfile
    from ait_build import pipeline
    out = {}
    for model in models:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                pipeline.emit(spec_path(model), target, tmp)
                count = len(os.listdir(os.path.join(tmp, "src")))
                out[model.name] = {"ok": True, "sources": count}
                progress(f"render {model.name} for {target}: {count} sources")
            except Exception as exc:  # any failure is a finding of the run, reported per model
                out[model.name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
                progress(f"render {model.name} for {target}: FAILED {out[model.name]['error']}")
    return out


def write_weights(models: list, target: str, progress) -> dict:
    """name -> {'ok', 'bytes'}: each built library's weights file written again from its spec's
    plan (random, from the spec's seed: no toolchain needed), where the libraries were built on
    another machine and copied without their weights; its digest must be the manifest's."""
    import hashlib
    from ait_build.codegen.emit import weights_bytes
    from ait_build.pipeline import build_plan
    out = {}
    for model in models:
        folder = os.path.join("build", target, model.name)
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as fh:
            want = json.load(fh)["weights"]
        plan = build_plan(spec_path(model), target)
        blob = weights_bytes(plan)
        ok = hashlib.sha256(blob).hexdigest() == want["sha256"]
        if ok:
            with open(os.path.join(folder, want["file"]), "wb") as fh:
                fh.write(blob)
        out[model.name] = {"ok": ok, "bytes": len(blob)}
        progress(f"weights {model.name}: " + (f"{len(blob) / 1e6:.0f} MB" if ok else
                                              "FAILED: not the weights its library was built with"))
    return out


def build_all(models: list, target: str, jobs: int, deadline: float, log, progress) -> dict:
    """One SCons run for every spec (-k: a failing model does not stop the others)."""
    specs = ",".join(spec_path(m) for m in models)
    start = time.time()
    cmd = [sys.executable, "-m", "SCons", "-Q", "-k", f"-j{jobs}", f"target={target}",
           f"spec={specs}", "cache=build/cache"]
    code, _ = run_limited(cmd, deadline, lambda line: (log.write(line + "\n"), log.flush()))
    seconds = time.time() - start
    built = {m.name: os.path.isfile(os.path.join("build", target, m.name, "manifest.json"))
             for m in models}
    progress(f"build for {target}: rc={code} in {seconds:.0f} s; built "
             f"{sum(built.values())}/{len(models)}"
             + "".join(f"; {n} not built" for n, ok in built.items() if not ok))
    return {"rc": code, "seconds": seconds, "built": built}


# -- bench ----------------------------------------------------------------------------------------
def bench_cases(model: ZooModel, batches: list | None, seqs) -> list:
    """[(batches, seq or None)]: one `ait-build bench` per seq."""
    batches = list(batches or model.batches)
    seqs = model.seqs if seqs is None else seqs
    return [(batches, s) for s in seqs] if seqs else [(batches, None)]


def bench_model(model: ZooModel, target: str, batches: list, seq, compile_mode: str,
                deadline: float, folder: str, progress, prebuilt: bool = False) -> dict:
    """`ait-build bench` in a process of its own; its JSON report (what it finished)."""
    tag = model.name + (f"_seq{seq}" if seq else "")
    report_path = os.path.join(folder, tag + ".json")
    if os.path.exists(report_path):  # an earlier run's
        os.unlink(report_path)
    cmd = [sys.executable, "-m", "ait_build", "bench", spec_path(model), "--target", target,
           "--batch", ",".join(map(str, batches)), "--vs", "torch", "--json", report_path]
    if seq:
        cmd += ["--dim", f"seq={seq}"]
    if prebuilt:
        cmd.append("--prebuilt")
    # cpu (a check, not the benchmark): the float16 spec as built, a few runs
    cmd += ["--compile-mode", compile_mode] if target != "cpu" else ["--runs", "5"]
    start = time.time()

    def show(line: str) -> None:  # the cases as they finish, not the build's steps
        if line and not line.startswith(("[", "|", "scons: ")):
            progress(f"  {tag}: {line}")

    code, lines = run_limited(cmd, deadline, show)
    report = {}
    if os.path.isfile(report_path):
        with open(report_path, encoding="utf-8") as fh:
            report = json.load(fh)
    report.update(rc=code, seconds=time.time() - start, seq=seq,
                  log=[l for l in lines if not l.startswith("[")][-60:])
    done = len(report.get("results", []))
    progress(f"bench {tag}: {done}/{len(batches)} cases in {report['seconds']:.0f} s"
             + ("" if code == 0 else f" (rc={code}: {_last_line(lines)})"))
    return report


# -- the command ----------------------------------------------------------------------------------
def select(args) -> list:
    """[(ZooModel, seqs or None)] the options pick."""
    names = [n.strip() for n in args.models.split(",")] if args.models else \
        list(QUICK) if args.quick else [m.name for m in SETS[args.set]]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"error: unknown zoo model {', '.join(unknown)}; choose from "
                         f"{', '.join(BY_NAME)}")
    seqs = tuple(int(s) for s in args.seq.split(",")) if args.seq else None
    out = []
    for name in names:
        model = BY_NAME[name]
        if not model.seqs:  # no seq dim (CNNs; T5's encoder has its seq fixed)
            out.append((model, None))
        else:
            out.append((model, seqs if seqs is not None else
                        (QUICK.get(name) if args.quick else None)))
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m ait_build.bench.zoo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma list (default: all; --quick: "
                   + ", ".join(QUICK) + ")")
    p.add_argument("--quick", action="store_true", help="three CNNs and GPT-2 at seq 128")
    p.add_argument("--set", choices=sorted(SETS), default="public", help="the models run "
                   "without --models: the public benchmark's, or `outside`: models nothing of "
                   "ours was tuned for (zoo_specs.OUTSIDE)")
    p.add_argument("--batch", help="comma list of batch sizes for every model (default: each "
                   "model's 1 and its large batch)")
    p.add_argument("--seq", help="comma list of seqs for the text models (default: theirs)")
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    p.add_argument("--steps", default="import,build,bench",
                   help=f"comma list from {', '.join(STEPS)} (default: import,build,bench)")
    p.add_argument("--target", default="h200", help="default: h200 (cpu: a check, 5 runs)")
    p.add_argument("--budget", type=float, default=0, help="seconds: start no step or model "
                   "after this (0: no limit); the bench of a model is stopped at it")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="compile jobs")
    p.add_argument("--import-jobs", type=int, default=max(1, min(6, (os.cpu_count() or 1) // 2)),
                   help="imports at once")
    p.add_argument("--reimport", action="store_true", help="import even where build/zoo "
                   "holds the spec already")
    p.add_argument("--prebuilt", action="store_true", help="bench: the libraries already in "
                   "build/TARGET as they are, without SCons (built on another machine)")
    p.add_argument("--out", default=os.path.join(ZOO_DIR, "results"), help="results folder")
    p.add_argument("--import-one", help=argparse.SUPPRESS)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.import_one:
        return import_one(args.import_one)
    return run(args)


def run(args) -> int:
    start = time.time()
    deadline = start + args.budget if args.budget else float("inf")
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    if any(s not in STEPS for s in steps):
        raise SystemExit(f"error: --steps takes {', '.join(STEPS)}")
    chosen = select(args)
    models = [m for m, _ in chosen]
    os.makedirs(args.out, exist_ok=True)
    zlog = open(os.path.join(args.out, "zoo.log"), "a", encoding="utf-8")

    def progress(text: str) -> None:
        line = f"[zoo {time.time() - start:6.0f} s] {text}"
        print(line, file=sys.stderr, flush=True)
        zlog.write(line + "\n")
        zlog.flush()

    if args.reimport:
        for m in models:
            if os.path.exists(spec_path(m)):
                os.unlink(spec_path(m))
    out = {"target": args.target, "models": [m.name for m in models], "steps": steps,
           "no_compile": args.no_compile, "budget_s": args.budget, "reports": [],
           "versions": _versions()}
    path = os.path.join(args.out, "zoo.json")

    def save():
        out["rows"] = summary_rows(out["reports"])
        out["elapsed_s"] = time.time() - start
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1, sort_keys=True)

    if "import" in steps:
        with open(os.path.join(args.out, "import.log"), "a", encoding="utf-8") as log:
            out["import"] = import_all(models, args.import_jobs, deadline, log, progress)
        models = [m for m in models if out["import"][m.name]["ok"]]
        save()
    models = [m for m in models if os.path.isfile(spec_path(m))]
    if "render" in steps:
        out["render"] = render_all(models, args.target, progress)
        save()
    if "build" in steps and time.time() < deadline:
        with open(os.path.join(args.out, "build.log"), "a", encoding="utf-8") as log:
            out["build"] = build_all(models, args.target, args.jobs, deadline, log, progress)
        save()
    if "weights" in steps:
        built = [m for m in models
                 if os.path.isfile(os.path.join("build", args.target, m.name, "manifest.json"))]
        out["weights"] = write_weights(built, args.target, progress)
        save()
    if "bench" in steps:
        folder = os.path.join(ZOO_DIR, "reports")
        os.makedirs(folder, exist_ok=True)
        mode = "none" if args.no_compile else "auto"
        batches = [int(b) for b in args.batch.split(",")] if args.batch else None
        seqs = dict((m.name, s) for m, s in chosen)
        for model in models:
            if not os.path.isfile(os.path.join("build", args.target, model.name, "manifest.json")):
                continue  # not built: the build step said so
            for case_batches, seq in bench_cases(model, batches, seqs.get(model.name)):
                if time.time() >= deadline:
                    progress(f"bench {model.name}{f' seq {seq}' if seq else ''}: no time left")
                    continue
                out["reports"].append(bench_model(model, args.target, case_batches, seq, mode,
                                                  deadline, folder, progress, args.prebuilt))
                save()
    save()
    table = markdown(out["rows"], args.no_compile)
    with open(os.path.join(args.out, "zoo.md"), "w", encoding="utf-8") as fh:
        fh.write(table + "\n")
    progress(f"done; {path}")
    print(table)
    return 0


def _versions() -> dict:
    from importlib import metadata
    out = {"python": sys.version.split()[0]}
    for package in ("torch", "torchvision", "transformers", "onnx", "numpy"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out


if __name__ == "__main__":
    sys.exit(main())
