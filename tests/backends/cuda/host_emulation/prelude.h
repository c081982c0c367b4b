// Runs the GPU layer's own kernels on the host (g++), for testing without a GPU: CUDA's
// built-in variables become thread-locals, __syncthreads a barrier among one std::thread per
// GPU thread of a block, __shared__ a static, and launches (rewritten from <<<...>>> by the
// test) run every block in turn. Warp shuffles exchange through a buffer per warp between two
// waits on a barrier of the warp's threads (every lane of a warp must reach a shuffle together,
// as the kernels' warp_sum and block_sum do).
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <array>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace emu {
inline thread_local uint3 thread_idx, block_idx;
inline thread_local dim3 block_dim, grid_dim;
inline thread_local std::barrier<>* block_barrier = nullptr;
inline thread_local std::barrier<>* warp_barrier = nullptr;
inline thread_local unsigned char* warp_slots = nullptr;  // 8 bytes a lane
inline thread_local unsigned lane = 0;

template <typename K, typename... A>
void launch(K kernel, dim3 grid, dim3 block, size_t, cudaStream_t, A... args) {
  const unsigned threads = block.x * block.y * block.z, warps = (threads + 31) / 32;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        std::barrier<> bar(threads);
        std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
        for (unsigned w = 0; w < warps; ++w)
          warp_bars.emplace_back(new std::barrier<>(std::min(32u, threads - 32 * w)));
        std::vector<std::array<unsigned char, 32 * 8>> slots(warps);
        std::vector<std::thread> pool;
        pool.reserve(threads);
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            thread_idx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            block_idx = uint3{bx, by, bz};
            block_dim = block;
            grid_dim = grid;
            block_barrier = &bar;
            warp_barrier = warp_bars[t / 32].get();
            warp_slots = slots[t / 32].data();
            lane = t % 32;
            kernel(args...);
            bar.arrive_and_drop();  // an exited thread no longer holds barriers back
            warp_barrier->arrive_and_drop();
          });
        for (auto& th : pool) th.join();
      }
}

// lane `from`'s value of `v` (its own where `from` is outside its width-lane segment)
template <typename T>
T exchange(T v, unsigned from, int width) {
  static_assert(sizeof(T) <= 8, "a shuffled value fits a lane's slot");
  std::memcpy(warp_slots + lane * 8, &v, sizeof(T));
  warp_barrier->arrive_and_wait();
  const unsigned w = static_cast<unsigned>(width);
  T out;
  std::memcpy(&out, warp_slots + (from / w == lane / w ? from : lane) * 8, sizeof(T));
  warp_barrier->arrive_and_wait();  // every lane has read before any writes again
  return out;
}
}  // namespace emu

#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)
#define threadIdx emu::thread_idx
#define blockIdx emu::block_idx
#define blockDim emu::block_dim
#define gridDim emu::grid_dim
inline void __syncthreads() { emu::block_barrier->arrive_and_wait(); }
template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  return emu::exchange(v, emu::lane ^ static_cast<unsigned>(mask), width);
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  return emu::exchange(v, emu::lane + delta, width);
}
