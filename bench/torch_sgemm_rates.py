"""One core's sgemm rate of torch.mm (MKL or oneDNN in PyTorch's x86-64 builds) on the shapes of
bench/panel_rates.cpp's CSV, beside that CSV's rate of our GEMM; see that file for the commands."""
import sys
import time

import torch

torch.set_num_threads(1)
print("torch", torch.__version__, "mkl", torch.backends.mkl.is_available(),
      "mkldnn", torch.backends.mkldnn.is_available())
with open(sys.argv[1]) as fh:
    ours = {line.split(",")[0]: line.strip().split(",") for line in fh if "," in line}
print(f"{'shape':26s} {'M':>5s} {'N':>5s} {'K':>5s} | GFLOP/s torch.mm  ours  ours/torch")
for name, (_, M, N, K, rate) in ours.items():
    M, N, K = int(M), int(N), int(K)
    a, b = torch.rand(M, K) - 0.5, torch.rand(K, N) - 0.5
    c = torch.empty(M, N)
    calls = max(10, int(3e9 / (2 * M * N * K)))
    best = 1e30
    for _ in range(calls):
        t0 = time.perf_counter()
        torch.mm(a, b, out=c)
        best = min(best, time.perf_counter() - t0)
    t = 2 * M * N * K / best / 1e9
    print(f"{name:26s} {M:5d} {N:5d} {K:5d} | {t:8.1f} {float(rate):8.1f} {float(rate)/t:8.2f}")
