// Which CUTLASS 3.x sm90 GEMM configuration our Hopper GEMMs should use for the transformer
// shapes (docs/cuda.md, "Hopper GEMMs"). Every configuration is the kernel gemm_sm90.cu.j2
// renders (TMA loads, wgmma, persistent scheduler, EVT epilogue gelu(acc + bias) with the bias
// per output column, float16 in and out, float32 accumulation, A [M, K] row-major, B the weight
// [N, K]), varying only the tile, the cluster and the schedule. For each (M, N, K) of BERT-base
// and ViT-B/16 at their large batches it prints the median of 20 CUDA-event timings after 5
// warm-ups and the TFLOP/s, one JSON line per (shape, configuration); sampled outputs are
// checked against a naive float32 kernel and a mismatch makes the program exit non-zero.
//
// Build (S = the nvidia-cutlass wheel's cutlass_library/source folder):
//   nvcc -std=c++17 -O3 -DNDEBUG -arch=sm_90a --expt-relaxed-constexpr -I$S/include \
//     -I$S/tools/util/include bench/hopper_gemm_tiles.cu -o build/hopper_gemm_tiles
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "cute/tensor.hpp"
#include "hopper_bench.cuh"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;
using Element = cutlass::half_t;
constexpr int kAlign = 8;

template <class Tile, class Cluster, class MainSchedule, class EpiSchedule>
struct Config {
  using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<
      cutlass::epilogue::thread::GELU, Element, float, Element, Element, float>;
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, Element, cutlass::layout::RowMajor,
      kAlign, Element, cutlass::layout::RowMajor, kAlign, EpiSchedule, Fusion>::CollectiveOp;
  using Main = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, cutlass::layout::RowMajor, kAlign,
      Element, cutlass::layout::ColumnMajor, kAlign, float, Tile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
      MainSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi>;
  using Op = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};
using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using CoopEpi = cutlass::epilogue::TmaWarpSpecializedCooperative;
using Pingpong = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using PingpongEpi = cutlass::epilogue::TmaWarpSpecialized;

// 256 sampled outputs: max |d - gelu(a . b + bias)| and max |reference|
__global__ void check(const Element* a, const Element* b, const Element* bias, const Element* d,
                      int M, int N, int K, float* err) {
  const unsigned id = (blockIdx.x * blockDim.x + threadIdx.x) * 2654435761u + 11u;
  const int m = id % M, n = (id / 3) % N;
  float acc = 0;
  for (int k = 0; k < K; ++k) acc += float(a[size_t(m) * K + k]) * float(b[size_t(n) * K + k]);
  acc += float(bias[n]);
  const float ref = 0.5f * acc * (1.0f + erff(acc * 0.70710678f));
  atomicMax(reinterpret_cast<int*>(err), __float_as_int(fabsf(float(d[size_t(m) * N + n]) - ref)));
  atomicMax(reinterpret_cast<int*>(err) + 1, __float_as_int(fabsf(ref)));
}

template <class C>
bool time(const char* name, int M, int N, int K, const Element* a, const Element* b,
          const Element* bias, Element* d, void* workspace, size_t workspace_bytes) {
  using Op = typename C::Op;
  using Kernel = typename C::Kernel;
  auto sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, make_shape(M, K, 1));
  auto sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, make_shape(N, K, 1));
  auto sd = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, make_shape(M, N, 1));
  typename Op::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K, 1}, {a, sa, b, sb},
                              {{}, d, sd, d, sd}};
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  args.epilogue.thread.bias_ptr = bias;
  args.hw_info.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
  Op op;
  if (op.can_implement(args) != cutlass::Status::kSuccess || Op::get_workspace_size(args) > workspace_bytes) {
    printf("{\"config\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"skipped\": true}\n", name, M, N, K);
    return true;
  }
  if (op.initialize(args, workspace) != cutlass::Status::kSuccess) return false;
  for (int r = 0; r < 5; ++r) op.run();
  std::vector<float> ms(20);
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  for (float& t : ms) {
    CHECK(cudaEventRecord(start));
    op.run();
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    CHECK(cudaEventElapsedTime(&t, start, end));
  }
  std::sort(ms.begin(), ms.end());
  float* err;
  CHECK(cudaMalloc(&err, 2 * sizeof(float)));
  CHECK(cudaMemset(err, 0, 2 * sizeof(float)));
  check<<<2, 128>>>(a, b, bias, d, M, N, K, err);
  float e[2];
  CHECK(cudaMemcpy(e, err, sizeof(e), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(err));
  const bool ok = e[0] <= 1e-2f * fmaxf(e[1], 1.0f);
  const float median = ms[10];
  printf("{\"config\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"ms\": %.4f, \"tflops\": %.1f, "
         "\"max_err\": %.3g, \"ok\": %s}\n", name, M, N, K, median, 2.0 * M * N * double(K) / median / 1e9,
         e[0], ok ? "true" : "false");
  fflush(stdout);
  return ok;
}

int main() {
  // (N, K) of BERT-base / ViT-B/16 layers: qkv, attention output, FFN up, FFN down; M = tokens
  const int nk[][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
  const int ms[] = {16384, 50432, 32768};  // BERT 128x128, ViT 256x197, BERT 8x4096
  const size_t max_m = 50432, max_n = 3072, max_k = 3072;
  Element *a, *b, *bias, *d;
  CHECK(cudaMalloc(&a, max_m * max_k * sizeof(Element)));
  CHECK(cudaMalloc(&b, max_n * max_k * sizeof(Element)));
  CHECK(cudaMalloc(&bias, max_n * sizeof(Element)));
  CHECK(cudaMalloc(&d, max_m * max_n * sizeof(Element)));
  const size_t workspace_bytes = 64 << 20;
  void* workspace;
  CHECK(cudaMalloc(&workspace, workspace_bytes));
  fill<<<2048, 256>>>(a, max_m * max_k, 1u, 0.5f);
  fill<<<2048, 256>>>(b, max_n * max_k, 2u, 0.5f);
  fill<<<16, 256>>>(bias, max_n, 3u, 0.5f);
  CHECK(cudaDeviceSynchronize());
  bool ok = true;
  for (int M : ms) {
    for (const auto& s : nk) {
      const int N = s[0], K = s[1];
      ok &= time<Config<Shape<_128, _256, _64>, Shape<_2, _1, _1>, Coop, CoopEpi>>(
          "cooperative 128x256x64 cluster 2x1", M, N, K, a, b, bias, d, workspace, workspace_bytes);
      ok &= time<Config<Shape<_256, _128, _64>, Shape<_1, _2, _1>, Coop, CoopEpi>>(
          "cooperative 256x128x64 cluster 1x2", M, N, K, a, b, bias, d, workspace, workspace_bytes);
      ok &= time<Config<Shape<_128, _128, _64>, Shape<_1, _1, _1>, Coop, CoopEpi>>(
          "cooperative 128x128x64 cluster 1x1", M, N, K, a, b, bias, d, workspace, workspace_bytes);
      ok &= time<Config<Shape<_128, _128, _64>, Shape<_2, _1, _1>, Pingpong, PingpongEpi>>(
          "pingpong 128x128x64 cluster 2x1", M, N, K, a, b, bias, d, workspace, workspace_bytes);
      ok &= time<Config<Shape<_64, _256, _64>, Shape<_2, _1, _1>, Pingpong, PingpongEpi>>(
          "pingpong 64x256x64 cluster 2x1", M, N, K, a, b, bias, d, workspace, workspace_bytes);
    }
  }
  printf("%s\n", ok ? "all configurations match the reference" : "MISMATCH");
  return ok ? 0 : 1;
}
