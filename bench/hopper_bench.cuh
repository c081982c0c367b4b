// What the Hopper kernel-variant microbenchmarks (hopper_*.cu) share: a CUDA error check that
// exits, and a deterministic fill of float16 data uniform in [-scale, scale).
#pragma once
#include <cstdio>
#include <cstdlib>
#include "cutlass/numeric_types.h"

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__); exit(2); } } while (0)

__global__ void fill(cutlass::half_t* p, size_t n, unsigned seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15; h *= 0x2c1b3c6du; h ^= h >> 12;
    p[i] = cutlass::half_t((float(h & 0xffff) / 32768.0f - 1.0f) * scale);
  }
}
