// What a CUDA graph's replay costs per kernel, apart from the kernels' work (issue 30: batch-1
// latency). Chains of N launches of a kernel that does next to nothing, each reading what the
// one before wrote (so no launch may start its work early), timed four ways:
//   eager        N launches on a stream, every call
//   graph        the N launches captured once, the graph replayed
//   graph+pdl    the same with programmatic dependent launch (each kernel is scheduled while the
//                one before runs, and waits for it on the GPU: griddepcontrol.wait), what the
//                stock h100/h200 targets do for small calls (docs/cuda.md)
// at 1 block and at one block per multiprocessor (a batch-1 kernel's usual grid). Prints one
// line per case: microseconds per replay (median of 20 sets of 100) and per kernel.
//
//   nvcc -O2 -std=c++17 -arch=sm_90a -o graph_replay bench/graph_replay.cu && ./graph_replay
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// One value handed down the chain: thread 0 of block 0 adds one to what the previous kernel
// wrote. With PDL the kernel first waits for its predecessor's memory (griddepcontrol.wait),
// then lets its successor be scheduled (griddepcontrol.launch_dependents).
__global__ void step(int* value, bool pdl) {
  if (pdl) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (blockIdx.x == 0 && threadIdx.x == 0) *value += 1;
  if (pdl) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

static void launch_chain(cudaStream_t s, int n, int blocks, bool pdl, int* value) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(128);
  cfg.stream = s;
  cfg.attrs = pdl ? &attr : nullptr;
  cfg.numAttrs = pdl ? 1 : 0;
  for (int i = 0; i < n; ++i) CHECK(cudaLaunchKernelEx(&cfg, step, value, pdl));
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::printf("%-10s %6s %6s %12s %12s\n", "mode", "blocks", "kernels", "us/replay", "us/kernel");
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* value;
  CHECK(cudaMalloc(&value, sizeof(int)));
  CHECK(cudaMemset(value, 0, sizeof(int)));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  const int reps = 100, sets = 20;
  long long launched = 0;
  for (int blocks : {1, prop.multiProcessorCount}) {
    for (int n : {1, 8, 56, 91, 256}) {
      for (int mode = 0; mode < 3; ++mode) {  // eager, graph, graph + PDL
        const bool pdl = mode == 2;
        cudaGraphExec_t exec = nullptr;
        if (mode > 0) {
          cudaGraph_t graph;
          CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
          launch_chain(s, n, blocks, pdl, value);
          CHECK(cudaStreamEndCapture(s, &graph));
          CHECK(cudaGraphInstantiate(&exec, graph, 0));
          CHECK(cudaGraphDestroy(graph));
        }
        auto once = [&] {
          if (exec) CHECK(cudaGraphLaunch(exec, s));
          else launch_chain(s, n, blocks, false, value);
        };
        for (int i = 0; i < 20; ++i) once();  // warm up
        std::vector<float> per_replay;
        for (int k = 0; k < sets; ++k) {
          CHECK(cudaEventRecord(t0, s));
          for (int i = 0; i < reps; ++i) once();
          CHECK(cudaEventRecord(t1, s));
          CHECK(cudaEventSynchronize(t1));
          float ms;
          CHECK(cudaEventElapsedTime(&ms, t0, t1));
          per_replay.push_back(ms * 1000.0f / reps);
        }
        launched += (long long)n * (20 + reps * sets);
        const float us = median(per_replay);
        const char* name = mode == 0 ? "eager" : mode == 1 ? "graph" : "graph+pdl";
        std::printf("%-10s %6d %6d %12.2f %12.3f\n", name, blocks, n, us, us / n);
        if (exec) CHECK(cudaGraphExecDestroy(exec));
      }
    }
  }
  CHECK(cudaStreamSynchronize(s));
  int got;
  CHECK(cudaMemcpy(&got, value, sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("# chain value %d of %lld launches: %s\n", got, launched,
              got == (int)launched ? "every launch ran, in order" : "MISMATCH");
  return got == (int)launched ? 0 : 1;
}
