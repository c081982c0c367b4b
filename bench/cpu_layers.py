"""Where a cpu call's time goes, layer by layer, beside ONNX Runtime's own profile.

Ours: the library's time_steps() entry (wall time of every kernel call), for one or more built
libraries taking turns run by run in one process (an A/B of two builds sees the same load).
ONNX Runtime: SessionOptions.enable_profiling on the same model's ONNX export, per-node kernel
time. Each step's minimum and median over the runs are kept: on a shared 2-core machine a
parallel region that loses a core for a time slice inflates medians, and minimums show what the
code can do. Prints one markdown row per graph node, in execution order, with ORT's nodes
matched by position (the seed CNN's convs line up one to one), and writes JSON with --out.

    python bench/cpu_layers.py build/cpu/resnet50_float32 build/cpu_mkl/resnet50_float32 \
        --onnx r50.onnx --batch 1 --runs 30 --out layers.json
    python bench/cpu_layers.py build/cpu/bert_base_float32 --batch 1 --dim seq=128 --runs 10

Build the libraries first (ait-build build, or ait-build bench once); export the ONNX file with
`torch.onnx.export` of the model's twin (ait_build/bench/models.py), as `ait-build bench` does.
The process's thread settings are the caller's (OMP_WAIT_POLICY, OMP_NUM_THREADS, and
--ort-threads for ONNX Runtime's pool).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile

import numpy as np


class Library:
    """One built library and its time_steps() entry, with inputs drawn once."""

    def __init__(self, build_dir: str, dims: dict):
        from ait_build.runtime import Model
        with open(f"{build_dir}/manifest.json") as fh:
            self.manifest = json.load(fh)
        self.name, self.model = build_dir, Model(build_dir)
        rng = np.random.default_rng(0)
        env = {d["name"]: dims.get(d["name"], d["opt"]) for d in self.manifest["dims"]}
        shape = lambda t: [env.get(d, d) for d in t["shape"]]  # noqa: E731
        import ml_dtypes
        dtype = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
        self.inputs = [rng.standard_normal(shape(t)).astype(dtype[t["dtype"]])
                       for t in self.manifest["inputs"]]
        self.outputs = [np.empty(shape(t), dtype[t["dtype"]]) for t in self.manifest["outputs"]]
        lib, c = self.model._api.lib, self.manifest["c_name"]
        self.count = lib[c + "_num_steps"]()
        self.fn = lib[c + "_time_steps"]
        self.fn.argtypes = [ctypes.c_void_p] * 5 + [ctypes.POINTER(ctypes.c_float), ctypes.c_int]
        self.dims = (ctypes.c_int64 * max(1, len(env)))(*env.values())
        self.ins = (ctypes.c_void_p * len(self.inputs))(*[a.ctypes.data for a in self.inputs])
        self.outs = (ctypes.c_void_p * len(self.outputs))(*[a.ctypes.data for a in self.outputs])
        self.runs = []

    def run(self, keep: bool) -> None:
        ms = (ctypes.c_float * self.count)()
        handle = self.model._enter()
        try:
            rc = self.fn(handle, self.dims, self.ins, self.outs, None, ms, self.count)
        finally:
            self.model._leave()
        if rc:
            raise RuntimeError(f"{self.name}: time_steps failed ({rc}): {self.model._api.error()}")
        if keep:
            self.runs.append(list(ms))

    def nodes(self) -> list:
        """(node, kernels, min ms, median ms) per graph node, steps of one node summed."""
        out, index = [], {}
        for i, step in enumerate(self.manifest["steps"]):
            node = step.get("node") or "(model edges)"
            if node not in index:
                index[node] = len(out)
                out.append([node, [], [0.0] * len(self.runs)])
            row = out[index[node]]
            row[1].append(step["kernel"])
            for r, run in enumerate(self.runs):
                row[2][r] += run[i]
        return [(n, k, min(t), statistics.median(t)) for n, k, t in out]


def ort_nodes(path: str, batch: int, runs: int, threads: int) -> list:
    """(node, op, min ms, median ms) per ONNX Runtime node with a kernel, in execution order."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(tempfile.gettempdir(), "cpu_layers_ort")
    if threads:
        opts.intra_op_num_threads = threads
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feed = {}
    for i in session.get_inputs():
        shape = [batch if not isinstance(d, int) else d for d in i.shape]
        shape[0] = batch
        feed[i.name] = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for _ in range(runs + 3):
        session.run(None, feed)
    profile = session.end_profiling()
    with open(profile) as fh:
        events = json.load(fh)
    os.remove(profile)
    times, ops = {}, {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][:-len("_kernel_time")]
            times.setdefault(name, []).append(e["dur"] / 1e3)
            ops[name] = e["args"].get("op_name", "")
    return [(n, ops[n], min(t[3:] or t), statistics.median(t[3:] or t)) for n, t in times.items()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="build folders of cpu libraries")
    ap.add_argument("--onnx", help="the model's ONNX export, profiled with ONNX Runtime")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                    help="other dims of our libraries (default: opt), e.g. --dim seq=128")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--ort-threads", type=int, default=0, help="0: ONNX Runtime's default")
    ap.add_argument("--out", help="write every row as JSON")
    args = ap.parse_args(argv)
    dims = dict(batch=args.batch, **{k: int(v) for k, v in (d.split("=") for d in args.dim)})
    libs = [Library(d, dims) for d in args.builds]
    for i in range(args.runs + 2):  # two untimed turns first
        for lib in libs:
            lib.run(keep=i >= 2)
    ours = [lib.nodes() for lib in libs]
    theirs = ort_nodes(args.onnx, args.batch, args.runs, args.ort_threads) if args.onnx else []
    heads = [f"{lib.name} min / med ms" for lib in libs]
    heads += ["ORT min / med ms", "ORT node"] if theirs else []
    print("| node | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    for i, row in enumerate(ours[0]):
        cells = [f"{o[i][2]:.3f} / {o[i][3]:.3f}" for o in ours]
        if theirs:
            t = theirs[i] if i < len(theirs) else None
            cells += [f"{t[2]:.3f} / {t[3]:.3f}", f"{t[1]} {t[0][:48]}"] if t else ["", ""]
        print(f"| {row[0]} | " + " | ".join(cells) + " |")
    totals = [f"{sum(r[2] for r in o):.2f} / {sum(r[3] for r in o):.2f}" for o in ours]
    if theirs:
        totals += [f"{sum(r[2] for r in theirs):.2f} / {sum(r[3] for r in theirs):.2f}", ""]
    print("| **sum** | " + " | ".join(totals) + " |")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"ours": {lib.name: o for lib, o in zip(libs, ours)}, "onnxruntime": theirs,
                       "batch": args.batch, "runs": args.runs}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
