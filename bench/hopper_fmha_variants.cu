// Which of CUTLASS example 88's Hopper FMHA variants, and which q/k/v layout, our attention
// should use (docs/cuda.md, "Attention"). For each case (batch, heads, sequence, head_dim 64) it
// times, with CUDA events over 20 runs after 3 warm-ups, every variant on two layouts:
//   contiguous: q, k, v as separate [B, H, S, D] tensors (the example's own layout);
//   packed:     three views of one [B, S, 3 * H * D] tensor (what a fused qkv projection makes,
//               and what our lowering passes today: row stride 3 * H * D).
// Query counts that are not multiples of 8 (ViT's 197) run too: can_implement is bypassed as in
// templates/cuda/attention_fmha.cu.j2. Every run is checked on sampled rows against a naive
// float32 kernel; a mismatch makes the program exit non-zero.
//
// Build (S = the nvidia-cutlass wheel's cutlass_library/source folder):
//   nvcc -std=c++17 -O3 -DNDEBUG -arch=sm_90a --expt-relaxed-constexpr -I$S/include \
//     -I$S/tools/util/include -I$S/examples/88_hopper_fmha -Itemplates/cuda/include \
//     bench/hopper_fmha_variants.cu -o build/hopper_fmha_variants
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include "cute/tensor.hpp"
#include "hopper_bench.cuh"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "cutlass/kernel_hardware_info.h"
#include "collective/fmha_fusion.hpp"
#include "device/device_universal.hpp"
#include "kernel/fmha_kernel_builder.hpp"

using namespace cute;
using Element = cutlass::half_t;
using QkvStride = cute::tuple<int, _1, cute::tuple<int, int>>;  // (row, head_dim, (batch, head))
constexpr int D = 64;

template <class Tile, class Schedule, class Fusion>
using Variant = cutlass::device::Universal<typename cutlass::fmha::kernel::FmhaBuilder<
    Element, float, float, Tile, QkvStride, QkvStride, QkvStride, Fusion, Schedule>::Kernel>;
using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using Pingpong = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using Residual = cutlass::fmha::collective::ResidualFusion;
using NoMask = cutlass::fmha::collective::DefaultFusion;

struct Strides {  // element strides of q, k, v (the same for the three) and of the output
  int row, batch, head;
};

// one block per sampled (batch, head, query): max |o - reference| and max |reference| of the row
__global__ void check_rows(const Element* q, const Element* k, const Element* v, const Element* o,
                           Strides in, int B, int H, int S, int samples, float* err) {
  extern __shared__ float p[];
  const unsigned id = blockIdx.x * 2654435761u + 7u;
  const int b = id % B, h = (id / 7) % H, i = blockIdx.x == 0 ? S - 1 : (id / 13) % S;
  const Element* qr = q + size_t(b) * in.batch + size_t(h) * in.head + size_t(i) * in.row;
  for (int j = threadIdx.x; j < S; j += blockDim.x) {
    const Element* kr = k + size_t(b) * in.batch + size_t(h) * in.head + size_t(j) * in.row;
    float s = 0;
    for (int d = 0; d < D; ++d) s += float(qr[d]) * float(kr[d]);
    p[j] = s * 0.125f;  // 1 / sqrt(64)
  }
  __syncthreads();
  if (threadIdx.x < D) {
    float m = -INFINITY, sum = 0, acc = 0;
    for (int j = 0; j < S; ++j) m = fmaxf(m, p[j]);
    for (int j = 0; j < S; ++j) {
      const float e = expf(p[j] - m);
      sum += e;
      acc += e * float(v[size_t(b) * in.batch + size_t(h) * in.head + size_t(j) * in.row + threadIdx.x]);
    }
    const float ref = acc / sum;
    const float got = float(o[(size_t(b) * S + i) * H * D + size_t(h) * D + threadIdx.x]);
    atomicMax(reinterpret_cast<int*>(err), __float_as_int(fabsf(got - ref)));
    atomicMax(reinterpret_cast<int*>(err) + 1, __float_as_int(fabsf(ref)));
  }
}

template <class Op>
bool run(const char* variant, const char* layout_name, Strides in, int B, int H, int S,
         const Element* q, const Element* k, const Element* v, Element* o, float* lse) {
  using Kernel = typename Op::Kernel;
  QkvStride s_in = make_stride(in.row, _1{}, make_stride(in.batch, in.head));
  QkvStride s_out = make_stride(H * D, _1{}, make_stride(S * H * D, D));
  cute::tuple<_1, cute::tuple<int, int>> s_lse = make_stride(_1{}, make_stride(0, 0));
  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
  typename Op::Arguments args{cute::make_tuple(B, H, S, S, D), {q, s_in, k, s_in, v, s_in},
                              {o, s_out, lse, s_lse}, hw};
  typename Kernel::Params params = Kernel::to_underlying_arguments(args, nullptr);
  constexpr int smem = Kernel::SharedStorageSize;
  CHECK(cudaFuncSetAttribute(cutlass::device_kernel<Kernel>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaMemset(o, 0, size_t(B) * S * H * D * sizeof(Element)));
  for (int r = 0; r < 3; ++r)
    if (Op::run(params, nullptr) != cutlass::Status::kSuccess) { printf("launch failed\n"); return false; }
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  CHECK(cudaEventRecord(start));
  for (int r = 0; r < 20; ++r) Op::run(params, nullptr);
  CHECK(cudaEventRecord(end));
  CHECK(cudaEventSynchronize(end));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, end));
  ms /= 20;
  float* err;
  CHECK(cudaMalloc(&err, 2 * sizeof(float)));
  CHECK(cudaMemset(err, 0, 2 * sizeof(float)));
  const int samples = 256;
  CHECK(cudaFuncSetAttribute(check_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, S * 4));
  check_rows<<<samples, 128, S * 4>>>(q, k, v, o, in, B, H, S, samples, err);
  float e[2];
  CHECK(cudaMemcpy(e, err, sizeof(e), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(err));
  const bool ok = e[0] <= 2e-3f * fmaxf(e[1], 1.0f);
  printf("{\"variant\": \"%s\", \"layout\": \"%s\", \"batch\": %d, \"heads\": %d, \"seq\": %d, "
         "\"ms\": %.4f, \"tflops\": %.1f, \"max_err\": %.3g, \"max_ref\": %.3g, \"ok\": %s}\n",
         variant, layout_name, B, H, S, ms, 4.0 * B * H * double(S) * S * D / ms / 1e9, e[0], e[1],
         ok ? "true" : "false");
  return ok;
}

template <class Op>
bool both_layouts(const char* variant, int B, int H, int S, Element* buf, Element* o, float* lse) {
  const size_t n = size_t(B) * S * H * D;
  // contiguous [B, H, S, D] q, k, v one after another; packed [B, S, 3, H, D] in the same buffer
  Strides contiguous{D, H * S * D, S * D}, packed{3 * H * D, S * 3 * H * D, D};
  bool ok = run<Op>(variant, "contiguous", contiguous, B, H, S, buf, buf + n, buf + 2 * n, o, lse);
  ok &= run<Op>(variant, "packed", packed, B, H, S, buf, buf + H * D, buf + 2 * H * D, o, lse);
  return ok;
}

int main() {
  const int cases[][3] = {{8, 12, 4096}, {256, 12, 197}, {128, 12, 128}, {1, 12, 197}};
  bool ok = true;
  for (const auto& c : cases) {
    const int B = c[0], H = c[1], S = c[2];
    const size_t n = size_t(B) * S * H * D;
    Element *buf, *o;
    float* lse;
    CHECK(cudaMalloc(&buf, 3 * n * sizeof(Element)));
    CHECK(cudaMalloc(&o, n * sizeof(Element)));
    CHECK(cudaMalloc(&lse, S * sizeof(float)));
    fill<<<2048, 256>>>(buf, 3 * n, 1234u, 1.0f);
    CHECK(cudaDeviceSynchronize());
    ok &= both_layouts<Variant<Shape<_128, _64, _64>, Coop, Residual>>("cooperative 128x64 residual", B, H, S, buf, o, lse);
    if (S % 64 == 0)  // without the mask, keys past S would count
      ok &= both_layouts<Variant<Shape<_128, _64, _64>, Coop, NoMask>>("cooperative 128x64 no-mask", B, H, S, buf, o, lse);
    ok &= both_layouts<Variant<Shape<_128, _64, _64>, Pingpong, Residual>>("pingpong 128x64 residual", B, H, S, buf, o, lse);
    ok &= both_layouts<Variant<Shape<_128, _128, _64>, Coop, Residual>>("cooperative 128x128 residual", B, H, S, buf, o, lse);
    CHECK(cudaFree(buf));
    CHECK(cudaFree(o));
    CHECK(cudaFree(lse));
  }
  printf("%s\n", ok ? "all variants match the reference" : "MISMATCH");
  return ok ? 0 : 1;
}
