// A 1x1 conv (pointwise) on one core, layer1 and layer2 shapes of ResNet-50 at batch 8 (one of two
// participants' rows): MKL's packed sgemm in row chunks plus an epilogue pass (bias, residual,
// ReLU), as the cpu target does, against a register-tiled kernel (6 pixels x 64 channels in
// AVX-512 registers) with the epilogue fused; and MKL's 2048^3 sgemm for scale. An experiment
// for docs/benchmarks.md (issue 14), not used by the product. Build line (mkl-devel installed):
//   g++ -O3 -std=c++17 -mavx512f -mavx512vl -mfma -fopenmp-simd -I$PREFIX/include pointwise_tile.cpp \
//     -L$PREFIX/lib -l:libmkl_intel_lp64.so.3 -l:libmkl_sequential.so.3 -l:libmkl_core.so.3 -Wl,-rpath,$PREFIX/lib
#include <mkl_cblas.h>
#include <mkl_service.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include <cmath>
typedef float vec16 __attribute__((vector_size(64)));

template <int K, int N, int R, int V>
static inline void tile(const float* a, const float* w, const float* bias, const float* res, float* dst, int o0) {
  vec16 acc[R][V];
  for (int r = 0; r < R; ++r) for (int v = 0; v < V; ++v) acc[r][v] = vec16{};
  for (int t = 0; t < K; ++t) {
    vec16 bv[V];
    for (int v = 0; v < V; ++v) std::memcpy(&bv[v], w + t * N + o0 + 16 * v, 64);
    for (int r = 0; r < R; ++r) { const float x = a[r * K + t]; for (int v = 0; v < V; ++v) acc[r][v] += x * bv[v]; }
  }
  for (int r = 0; r < R; ++r) for (int v = 0; v < V; ++v) {
    vec16 b, q; std::memcpy(&b, bias + o0 + 16 * v, 64);
    vec16 s = acc[r][v] + b;
    if (res) { std::memcpy(&q, res + r * N + o0 + 16 * v, 64); s += q; }
    s = s > 0 ? s : vec16{};
    std::memcpy(dst + r * N + o0 + 16 * v, &s, 64);
  }
}
template <int K, int N>
static void direct(int M, const float* x, const float* w, const float* bias, const float* res, float* out) {
  constexpr int BLOCK = 96;
  for (int m0 = 0; m0 < M; m0 += BLOCK) {
    const int mr = std::min(BLOCK, M - m0);
    for (int o0 = 0; o0 < N; o0 += 64)
      for (int m = m0; m < m0 + mr; m += 6) {
        const float* r = res ? res + m * N : nullptr;
        switch (std::min(6, m0 + mr - m)) {
          case 6: tile<K, N, 6, 4>(x + m * K, w, bias, r, out + m * N, o0); break;
          case 5: tile<K, N, 5, 4>(x + m * K, w, bias, r, out + m * N, o0); break;
          case 4: tile<K, N, 4, 4>(x + m * K, w, bias, r, out + m * N, o0); break;
          case 3: tile<K, N, 3, 4>(x + m * K, w, bias, r, out + m * N, o0); break;
          case 2: tile<K, N, 2, 4>(x + m * K, w, bias, r, out + m * N, o0); break;
          default: tile<K, N, 1, 4>(x + m * K, w, bias, r, out + m * N, o0); break;
        }
      }
  }
}
static void mkl_path(int M, int K, int N, const float* x, const float* packed, const float* bias, const float* res, float* out) {
  const int chunk = std::max(128, (1 << 17) / N);
  for (int m = 0; m < M; m += chunk) {
    const int rows = std::min(chunk, M - m);
    cblas_sgemm_compute(CblasRowMajor, CblasNoTrans, CblasPacked, rows, N, K, x + (size_t)m * K, K, packed, N, 0.0f, out + (size_t)m * N, N);
    for (int i = 0; i < rows; ++i) {
      float* c = out + (size_t)(m + i) * N; const float* r = res ? res + (size_t)(m + i) * N : nullptr;
#pragma omp simd
      for (int j = 0; j < N; ++j) { float v = c[j] + bias[j] + (r ? r[j] : 0.f); c[j] = v > 0 ? v : 0; }
    }
  }
}
template <int K, int N>
static void run(int M, bool with_res) {
  std::vector<float> x((size_t)M * K), w(K * N), bias(N), res((size_t)M * N), o1((size_t)M * N), o2((size_t)M * N);
  srand(1);
  for (auto& v : x) v = rand() / (float)RAND_MAX - 0.5f;
  for (auto& v : w) v = rand() / (float)RAND_MAX - 0.5f;
  for (auto& v : bias) v = rand() / (float)RAND_MAX - 0.5f;
  for (auto& v : res) v = rand() / (float)RAND_MAX - 0.5f;
  size_t bytes = cblas_sgemm_pack_get_size(CblasBMatrix, M, N, K);
  float* packed = (float*)mkl_malloc(bytes, 64);
  cblas_sgemm_pack(CblasRowMajor, CblasBMatrix, CblasNoTrans, M, N, K, 1.0f, w.data(), N, packed);
  const float* r = with_res ? res.data() : nullptr;
  double best[2] = {1e9, 1e9}; std::vector<double> all[2];
  for (int it = 0; it < 40; ++it) {
    for (int s = 0; s < 2; ++s) {
      auto t0 = std::chrono::steady_clock::now();
      if (s == 0) mkl_path(M, K, N, x.data(), packed, bias.data(), r, o1.data());
      else direct<K, N>(M, x.data(), w.data(), bias.data(), r, o2.data());
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      best[s] = std::min(best[s], ms); all[s].push_back(ms);
    }
  }
  double md = 0; for (size_t i = 0; i < o1.size(); ++i) md = std::max(md, (double)std::fabs(o1[i] - o2[i]));
  for (int s = 0; s < 2; ++s) std::sort(all[s].begin(), all[s].end());
  printf("M=%d K=%d N=%d res=%d: mkl+epilogue min %.3f med %.3f ms | direct fused min %.3f med %.3f ms | max diff %.2g\n",
         M, K, N, (int)with_res, best[0], all[0][20], best[1], all[1][20], md);
  mkl_free(packed);
}
static void square() {
  const int n = 2048;
  std::vector<float> a((size_t)n * n, 0.001f), b((size_t)n * n, 0.002f), c((size_t)n * n);
  for (int r = 0; r < 4; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("MKL sgemm %d^3: %.1f GFLOP/s\n", n, 2.0 * n * n * n / s / 1e9);
  }
}
int main() {
  mkl_set_num_threads(1);
  square();
  const int M = 8 * 3136 / 2;  // one of two participants' rows at batch 8
  run<64, 256>(M, true);   // layer1 conv3 (residual)
  run<64, 256>(M, false);  // layer1.0 downsample
  run<256, 64>(M, false);  // layer1.1 conv1
  run<64, 64>(M, false);   // layer1.0 conv1
  run<128, 512>(8 * 784 / 2, true);  // layer2 conv3
  return 0;
}
