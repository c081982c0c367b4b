// Runs the GPU layer's own kernels on the host (g++), for testing without a GPU: CUDA's
// built-in variables become thread-locals, __syncthreads a barrier among one std::thread per
// GPU thread of a block, __shared__ a static, and launches (rewritten from <<<...>>> by the
// test) run every block in turn. Warp shuffles are not emulated.
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <barrier>
#include <cstdlib>
#include <thread>
#include <vector>

namespace emu {
inline thread_local uint3 thread_idx, block_idx;
inline thread_local dim3 block_dim, grid_dim;
inline thread_local std::barrier<>* block_barrier = nullptr;

template <typename K, typename... A>
void launch(K kernel, dim3 grid, dim3 block, size_t, cudaStream_t, A... args) {
  const unsigned threads = block.x * block.y * block.z;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        std::barrier<> bar(threads);
        std::vector<std::thread> pool;
        pool.reserve(threads);
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            thread_idx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            block_idx = uint3{bx, by, bz};
            block_dim = block;
            grid_dim = grid;
            block_barrier = &bar;
            kernel(args...);
            bar.arrive_and_drop();  // an exited thread no longer holds barriers back
          });
        for (auto& th : pool) th.join();
      }
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
T __shfl_xor_sync(unsigned, T, int, int = 32) { std::abort(); }
template <typename T>
T __shfl_down_sync(unsigned, T, unsigned, int = 32) { std::abort(); }
