// One core's sgemm rate, C[M,N] = A[M,K] * B[K,N], on shapes the seed models' weight GEMMs give a
// part at batch 1 and 8 with two threads: MKL plain and on a weight packed once (cblas_sgemm_pack),
// OpenBLAS (scipy-openblas32), and the cpu target's own GEMM (templates/cpu/ait_panel.h.j2, the
// product's header itself: its panels and 4 x 64 register tiles). Best of repeated calls, so the
// data stay in cache (a model run does not: bench/cpu_ab.py measures that). An experiment for
// docs/benchmarks.md (issue 14), not used by the product. Build line (mkl-devel and
// scipy-openblas32 installed; PREFIX = the environment, OB = scipy_openblas32's lib folder):
//   g++ -O3 -std=c++17 -mavx2 -mfma -ffp-contract=fast -I$PREFIX/include gemm_rates.cpp \
//     -L$PREFIX/lib -l:libmkl_intel_lp64.so.3 -l:libmkl_sequential.so.3 -l:libmkl_core.so.3 \
//     -L$OB -lscipy_openblas -Wl,-rpath,$PREFIX/lib -Wl,-rpath,$OB -o gemm_rates
#include <mkl_cblas.h>
#include <mkl_service.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../templates/cpu/ait_panel.h.j2"

extern "C" void scipy_cblas_sgemm(int, int, int, int, int, int, float, const float*, int,
                                  const float*, int, float, float*, int);
extern "C" void scipy_openblas_set_num_threads(int);

static double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
  mkl_set_num_threads(1);
  scipy_openblas_set_num_threads(1);
  struct Shape { const char* what; int M, N, K; };
  const Shape shapes[] = {
      {"r50 l1 1x1 64->64 (rows)", 1568, 64, 64},   {"r50 l1 1x1 64->256 (rows)", 1568, 256, 64},
      {"r50 l2 1x1 128->512", 392, 512, 128},        {"r50 l3 1x1 1024->256 (cols)", 196, 128, 1024},
      {"r50 l3 3x3 im2col (cols)", 196, 128, 2304},  {"r50 l4 1x1 2048->512 (cols)", 49, 256, 2048},
      {"r50 l4 3x3 im2col (cols)", 49, 256, 4608},   {"r50 fc (cols)", 1, 500, 2048},
      {"bert b1 qkv-size (cols)", 128, 384, 768},    {"bert b1 ffn up (cols)", 128, 1536, 768},
      {"bert b1 ffn down (cols)", 128, 384, 3072},   {"bert b8 ffn down (rows)", 512, 768, 3072},
      {"vit b1 ffn up (cols)", 197, 1536, 768},
  };
  std::printf("%-30s %5s %5s %5s | GFLOP/s: mkl  mkl-packed  openblas  own\n", "shape", "M", "N", "K");
  for (const Shape& s : shapes) {
    const int M = s.M, N = s.N, K = s.K;
    std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c0(size_t(M) * N), c1(c0.size());
    srand(1);
    for (float& v : a) v = rand() / float(RAND_MAX) - 0.5f;
    for (float& v : b) v = rand() / float(RAND_MAX) - 0.5f;
    float* packed = static_cast<float*>(mkl_malloc(cblas_sgemm_pack_get_size(CblasBMatrix, M, N, K), 64));
    cblas_sgemm_pack(CblasRowMajor, CblasBMatrix, CblasNoTrans, M, N, K, 1.0f, b.data(), N, packed);
    std::vector<float> panels(ait::panel_floats(K, N));
    ait::pack_panels(b.data(), K, N, N, false, 1.0f, panels.data());
    double best[4] = {1e30, 1e30, 1e30, 1e30}, diff = 0.0;
    const int calls = std::max(10, int(3e9 / (2.0 * M * N * K)));
    for (int call = 0; call < calls; ++call)
      for (int v = 0; v < 4; ++v) {
        const double t0 = now_ms();
        if (v == 0) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c0.data(), N);
        if (v == 1) cblas_sgemm_compute(CblasRowMajor, CblasNoTrans, CblasPacked, M, N, K, a.data(), K, packed, N, 0.0f, c0.data(), N);
        if (v == 2) scipy_cblas_sgemm(101, 111, 111, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c0.data(), N);
        if (v == 3) ait::panel_gemm(M, N, K, a.data(), K, panels.data(), c1.data(), N, false);
        best[v] = std::min(best[v], now_ms() - t0);
      }
    for (size_t i = 0; i < c0.size(); ++i) diff = std::max(diff, double(std::fabs(c0[i] - c1[i])));
    std::printf("%-30s %5d %5d %5d |", s.what, M, N, K);
    for (double t : best) std::printf(" %6.1f", 2.0 * M * N * K / t / 1e6);
    std::printf("   (max |own - openblas| %.1g)\n", diff);
    mkl_free(packed);
  }
  return 0;
}
