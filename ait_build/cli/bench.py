"""`ait-build bench`: a built model's latency beside PyTorch and ONNX Runtime (the work:
bench/)."""

from __future__ import annotations

import sys

from ait_build.bench import cuda as bench_cuda, run as bench_run, steps as bench_steps
from ait_build.bench.competitors import COMPETITORS
from ait_build.bench.cuda import (COMPILE_MODES, DEFAULT_RUNS, DEFAULT_WARMUP, LARGE_ROWS,
                                  LARGE_RUNS, LARGE_WARMUP)
from ait_build.bench.run import CPU_RUNS, CPU_WARMUP
from ait_build.cli.args import (add_spec_argument, add_target_argument, dim_value, dims_of,
                                nonnegative_int, positive_int, positive_int_list)
from ait_build.errors import AitError
from ait_build.files.output import check_output

DESCRIPTION = ("Time a built model beside PyTorch (and ONNX Runtime on cpu): the model an imported "
               "spec's `source:` names, or a zoo spec's twin, with the spec's weights. On cpu: "
               "perf_counter, each side in its own process, the sides taking turns of a few calls. "
               "On a cuda target (a100, h100, h200): CUDA events in one process, our library with "
               "and without its CUDA graphs against PyTorch eager, eager captured in a CUDA graph "
               "and torch.compile (--vs torch); a case with more "
               f"than {LARGE_ROWS} rows (the product of its dims, batch x seq) runs at most "
               f"{LARGE_RUNS} timed calls after at most {LARGE_WARMUP} untimed ones.")
EXAMPLES = ["ait-build bench resnet50 --target cpu --dtype float32 --vs torch,onnxruntime",
            "ait-build bench specs/cnn.yaml --vs torch,onnxruntime   # imported: vs its source",
            "ait-build bench bert_base --target h200 --batch 1,128 --vs torch --json bert.json"]


def add_arguments(p) -> None:
    add_spec_argument(p)
    add_target_argument(p)
    p.add_argument("--batch", type=positive_int_list,
                   help="comma-separated batch sizes (default: 1, or --dim batch=N), e.g. "
                   "--batch 1,32")
    p.add_argument("--dim", action="append", type=dim_value, metavar="NAME=VALUE",
                   help="other dims (default: opt), e.g. --dim seq=128")
    p.add_argument("--vs", default="", help="comma list from: " + ", ".join(COMPETITORS)
                   + " (cuda targets: torch), e.g. --vs torch")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"],
                   help="build a copy of the spec with this dtype (e.g. float32 on cpu)")
    p.add_argument("--runs", type=positive_int, help=f"timed runs per case (default: {CPU_RUNS} on "
                   f"cpu, {DEFAULT_RUNS} on cuda, at most {LARGE_RUNS} for large cuda cases)")
    p.add_argument("--warmup", type=nonnegative_int, help=f"untimed runs first (default: "
                   f"{CPU_WARMUP} on cpu, {DEFAULT_WARMUP} on cuda, at most {LARGE_WARMUP} for "
                   "large cuda cases)")
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
    p.add_argument("--prebuilt", action="store_true",
                   help="time the library already in build/TARGET/NAME as it is, without SCons "
                   "(e.g. built on a machine with the toolchain, copied here)")
    p.add_argument("--json", metavar="FILE", help="write the results to this file")


def run(args) -> int:
    if args.json:  # before the bench, not after it
        check_output(args.json, [args.spec], make_folder=True)
    dims = dims_of(args.dim)
    batch = dims.pop("batch", None)  # --dim batch=N alone is --batch N
    if batch is not None and args.batch and args.batch != [batch]:
        raise AitError(f"dim 'batch' is given twice (--dim batch={batch} and --batch "
                       f"{','.join(map(str, args.batch))})")
    batches = args.batch or [batch or 1]
    vs = list(dict.fromkeys(v.strip() for v in (args.vs or "").split(",") if v.strip()))  # each once
    report = bench_run.run_bench(args.spec, args.target, batches, vs, args.runs, args.warmup,
                                 dims, args.jobs, args.dtype, args.in_process,
                                 args.compile_mode,
                                 on_case=lambda r: bench_run.write_json(r, args.json),
                                 prebuilt=args.prebuilt)
    if report.get("clock") == bench_cuda.CLOCK:  # timed on a CUDA device: its own table
        print(bench_cuda.table(report))
    else:
        print(bench_run.table(report, vs))
    if args.steps:
        bench_steps.add_to(report, args.target)
    if args.json:
        bench_run.write_json(report, args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
