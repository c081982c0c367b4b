// MKL's sgemm on one core (2048^3, six calls, GFLOP/s each): the machine's float32 FMA rate as
// the best BLAS reaches it, for reading the models' rates against (docs/benchmarks.md, issue 14).
// Run one alone, then two at once pinned to the two cores, to see each core's rate while both
// work. Build line (mkl-devel installed):
//   g++ -O2 -I$PREFIX/include mkl_sgemm_rate.cpp -L$PREFIX/lib -l:libmkl_intel_lp64.so.3 \
//     -l:libmkl_sequential.so.3 -l:libmkl_core.so.3 -Wl,-rpath,$PREFIX/lib -o mkl_sgemm_rate
#include <mkl_cblas.h>
#include <mkl_service.h>
#include <chrono>
#include <cstdio>
#include <vector>

int main() {
  mkl_set_num_threads(1);
  const int n = 2048;
  std::vector<float> a(static_cast<size_t>(n) * n, 0.001f), b(a.size(), 0.002f), c(a.size());
  std::printf("MKL sgemm %d^3, one thread, GFLOP/s:", n);
  for (int call = 0; call < 6; ++call) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(" %.1f", 2.0 * n * n * n / s / 1e9);
  }
  std::printf("\n");
  return 0;
}
