"""ONNX Runtime's whole-run time with and without its profiler (which bench/cpu_layers.py uses for
its per-node column), in alternating blocks of 10 runs, one session at a time (two live sessions'
spinning pools would take each other's cores).

    python bench/ort_profile_cost.py r50_b1.onnx
"""
import onnxruntime as ort, numpy as np, time, statistics, sys, os
path = sys.argv[1]
x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
times = {"plain": [], "profiled": []}
for block in range(4):
    for k in ("plain", "profiled"):
        so = ort.SessionOptions()
        so.enable_profiling = k == "profiled"
        so.intra_op_num_threads = 2
        s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        name = s.get_inputs()[0].name
        for _ in range(3): s.run(None, {name: x})
        for _ in range(10):
            t = time.perf_counter(); s.run(None, {name: x}); times[k].append((time.perf_counter() - t) * 1e3)
        if so.enable_profiling: os.remove(s.end_profiling())
        del s
for k, v in times.items():
    print(f"{k}: median {statistics.median(v):.2f} ms, min {min(v):.2f}")
