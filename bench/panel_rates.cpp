// One core's rate of the cpu target's own GEMM (templates/cpu/ait_panel.h.j2's panel_gemm, the
// product's header itself) on the seed models' weight-GEMM shapes, best of repeated calls with
// the data in cache, printed as CSV (name,M,N,K,GFLOP/s) for bench/torch_sgemm_rates.py to set
// beside torch.mm's rate on the same machine. Needs no BLAS, so the binary runs on any x86-64
// machine with AVX-512 (how the Intel figures in docs/benchmarks.md were taken). An experiment,
// not product code:
//   g++ -O3 -std=c++17 -mavx2 -mfma -ffp-contract=fast bench/panel_rates.cpp -o panel_rates
//   taskset -c 1 ./panel_rates > rates.csv
//   taskset -c 1 python bench/torch_sgemm_rates.py rates.csv
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../templates/cpu/ait_panel.h.j2"

static double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
  struct Shape { const char* what; int M, N, K; };
  const Shape shapes[] = {
      {"r50 l1 1x1 64->64", 1568, 64, 64},         {"r50 l1 1x1 64->256", 1568, 256, 64},
      {"r50 l2 1x1 128->512", 392, 512, 128},      {"r50 l3 1x1 1024->256", 196, 128, 1024},
      {"r50 l3 3x3 im2col", 196, 128, 2304},       {"r50 l4 1x1 2048->512", 49, 256, 2048},
      {"r50 l4 3x3 im2col", 49, 256, 4608},        {"r50 7x7 F2 tile gemm", 16, 512, 512},
      {"r50 28x28 F4 tile gemm", 49, 128, 128},    {"bert b1 ffn up", 128, 1536, 768},
      {"bert b1 ffn down", 128, 384, 3072},        {"bert b8 ffn down", 512, 768, 3072},
      {"vit b1 ffn up", 197, 1536, 768},
  };
  for (const Shape& s : shapes) {
    const int M = s.M, N = s.N, K = s.K;
    std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N);
    for (float& v : a) v = rand() / float(RAND_MAX) - 0.5f;
    for (float& v : b) v = rand() / float(RAND_MAX) - 0.5f;
    std::vector<float> panels(ait::panel_floats(K, N));
    ait::pack_panels(b.data(), K, N, N, false, 1.0f, panels.data());
    double best = 1e30;
    const int calls = std::max(10, int(3e9 / (2.0 * M * N * K)));
    for (int i = 0; i < calls; ++i) {
      const double t0 = now_ms();
      ait::panel_gemm(M, N, K, a.data(), K, panels.data(), c.data(), N, false);
      best = std::min(best, now_ms() - t0);
    }
    std::printf("%s,%d,%d,%d,%.1f\n", s.what, M, N, K, 2.0 * M * N * K / best / 1e6);
  }
  return 0;
}
