// One core's rate of our AVX2 GEMM tiles (templates/cpu/include/ait_panel.h, panel_gemm_avx2)
// beside MKL's packed sgemm (cblas_sgemm_compute on a cblas_sgemm_pack copy, as ait_packed.h
// uses it), on ResNet-50's, MobileNetV3's, BERT-base's and ResNeXt-101's weight-GEMM shapes at
// batch 1 (bench/ort_matmul.py times ONNX Runtime's on the same shapes); data
// in cache, the two taking turns (best of five rounds each), GFLOP/s and ours / MKL time. An
// experiment, not product code; with the mkl-devel wheel installed (PREFIX: its include/ and
// lib/, e.g. python -c "import sys; print(sys.prefix)"):
//   g++ -O3 -std=c++17 -I templates/cpu/include -I $PREFIX/include bench/panel_vs_mkl.cpp
//     -o panel_vs_mkl -L $PREFIX/lib -l:libmkl_intel_lp64.so.3 -l:libmkl_sequential.so.3
//     -l:libmkl_core.so.3 -Wl,-rpath,$PREFIX/lib && taskset -c 1 ./panel_vs_mkl
// (one command line)
#include <mkl_cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ait_panel.h"

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
  struct Shape { const char* what; int M, K, N; };
  const Shape shapes[] = {
      {"bert qkv", 128, 768, 2304},          {"bert out", 128, 768, 768},
      {"bert ffn up", 128, 768, 3072},       {"bert ffn down", 128, 3072, 768},
      {"bert ffn down, half", 128, 3072, 384}, {"r50 l1 1x1", 3136, 64, 256},
      {"r50 l1 1x1 reduce", 3136, 256, 64},  {"r50 l2 1x1", 784, 512, 128},
      {"r50 l3 1x1", 196, 1024, 256},        {"r50 l4 1x1", 49, 512, 2048},
      {"mnv3 1x1 24->72", 3136, 24, 72},     {"mnv3 1x1 80->480", 196, 80, 480},
      {"classifier 960->1280", 1, 960, 1280}, {"r50 fc", 1, 2048, 1000},
      {"bert b1 rows 2", 2, 768, 768},      {"rx101 s1 1x1", 3136, 256, 256},
      {"rx101 s2 1x1", 784, 512, 512},       {"rx101 s3 1x1", 196, 1024, 1024},
      {"rx101 s4 1x1", 49, 2048, 2048}};
  if (!ait::panel_avx2()) return std::printf("this CPU has no AVX2 with FMA\n"), 1;
  std::printf("shape,M,K,N,mkl_gflops,ours_gflops,ours_over_mkl_time,rel_diff\n");
  for (const Shape& s : shapes) {
    const int M = s.M, K = s.K, N = s.N;
    std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c_mkl(size_t(M) * N), c_ours(c_mkl);
    for (float& v : a) v = std::rand() / float(RAND_MAX) - 0.5f;
    for (float& v : b) v = std::rand() / float(RAND_MAX) - 0.5f;
    std::vector<float> packed(cblas_sgemm_pack_get_size(CblasBMatrix, 256, N, K) / 4 + 16);
    cblas_sgemm_pack(CblasRowMajor, CblasBMatrix, CblasNoTrans, 256, N, K, 1.0f, b.data(), N,
                     packed.data());
    std::vector<float> panels(ait::panel_floats(K, N));
    ait::pack_panels(b.data(), K, N, N, false, 1.0f, panels.data(), ait::PanelAvx2::kWidth);
    const double flops = 2.0 * M * N * K;
    const int calls = std::max(3, int(2e9 / flops));
    double best_mkl = 1e30, best_ours = 1e30;
    for (int round = 0; round < 5; ++round) {
      double t0 = now();
      for (int i = 0; i < calls; ++i)
        cblas_sgemm_compute(CblasRowMajor, CblasNoTrans, CblasPacked, M, N, K, a.data(), K,
                            packed.data(), N, 0.0f, c_mkl.data(), N);
      const double t1 = now();
      for (int i = 0; i < calls; ++i)
        ait::panel_gemm_avx2(M, N, K, a.data(), K, panels.data(), c_ours.data(), N, false);
      const double t2 = now();
      best_mkl = std::min(best_mkl, (t1 - t0) / calls);
      best_ours = std::min(best_ours, (t2 - t1) / calls);
    }
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < c_mkl.size(); ++i) {
      diff += double(c_mkl[i] - c_ours[i]) * (c_mkl[i] - c_ours[i]);
      norm += double(c_mkl[i]) * c_mkl[i];
    }
    std::printf("%s,%d,%d,%d,%.1f,%.1f,%.2f,%.1e\n", s.what, M, K, N, flops / best_mkl / 1e9,
                flops / best_ours / 1e9, best_ours / best_mkl, std::sqrt(diff / norm));
  }
}
