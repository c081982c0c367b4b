"""One side of a cpu comparison alone in its process: back-to-back calls, then turns as
`ait-build bench` takes them (an idle wait, one untimed call, three timed), to tell the kernels'
time from what waking the thread pool after an idle costs.

    python bench/cpu_turns.py ours build/cpu/mobilenet_v3_large_float32 --threads 2
    python bench/cpu_turns.py ort model.onnx --threads 2 --idle 0.1

`ours` takes a build folder (AIT_NUM_THREADS set to --threads), `ort` an ONNX file (intra-op
threads); the model's one input is a [1, 3, 224, 224] image. Export the ONNX file as
`ait-build bench` does (torch.onnx.export of the spec's source module with its weights).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def caller(side: str, path: str, threads: int):
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    if side == "ours":
        os.environ["AIT_NUM_THREADS"] = str(threads)
        from ait_build.runtime import Model
        model = Model(path)
        name = list(model.inputs)[0]
        return lambda: model.run({name: x})
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return lambda: session.run(None, {name: x})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("side", choices=["ours", "ort"])
    ap.add_argument("path", help="build folder (ours) or ONNX file (ort)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--idle", type=float, default=0.1, help="seconds before each turn")
    ap.add_argument("--calls", type=int, default=100, help="back-to-back calls")
    ap.add_argument("--turns", type=int, default=20)
    args = ap.parse_args()
    call = caller(args.side, args.path, args.threads)
    for _ in range(10):
        call()
    times = []
    for _ in range(args.calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    turns = []
    for _ in range(args.turns):
        time.sleep(args.idle)
        call()
        for _ in range(3):
            start = time.perf_counter()
            call()
            turns.append(time.perf_counter() - start)
    print(f"{args.side}, {args.threads} threads: back to back median {statistics.median(times) * 1e3:.2f}"
          f" ms (min {min(times) * 1e3:.2f}), in turns after {args.idle * 1e3:.0f} ms idle "
          f"{statistics.median(turns) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
