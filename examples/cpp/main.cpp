// Runs build/cpu/mlp/libmlp.so without Python: load the weights, run one fixed batch, print the
// outputs. Build and run (from the repository root, after `scons target=cpu model=mlp`):
//   g++ -std=c++17 -O2 examples/cpp/main.cpp -Ibuild/cpu/mlp -Lbuild/cpu/mlp -lmlp \
//       -Wl,-rpath,"$PWD/build/cpu/mlp" -o mlp_example
//   ./mlp_example build/cpu/mlp
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mlp.h"

int main(int argc, char** argv) {
  const std::string build_dir = argc > 1 ? argv[1] : "build/cpu/mlp";
  const std::string weights = build_dir + "/weights.safetensors";

  ait_mlp* model = nullptr;
  if (ait_mlp_create(weights.c_str(), &model) != 0) {
    std::fprintf(stderr, "cannot load %s: %s\n", weights.c_str(), ait_mlp_last_error());
    return 1;
  }

  // dims in manifest order (mlp has one: batch); inputs and outputs dense, row-major
  const int64_t batch = 3, in_features = 32, out_features = 16;
  std::vector<float> x(batch * in_features);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
  std::vector<float> y(batch * out_features);

  const int64_t dims[] = {batch};
  const void* inputs[] = {x.data()};
  void* outputs[] = {y.data()};
  if (ait_mlp_run(model, dims, inputs, outputs, /*stream=*/nullptr) != 0) {
    std::fprintf(stderr, "run failed: %s\n", ait_mlp_last_error());
    ait_mlp_destroy(model);
    return 1;
  }

  std::printf("softmax %lld %lld\n", static_cast<long long>(batch), static_cast<long long>(out_features));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < out_features; ++j) std::printf("%s%.9g", j ? " " : "", y[b * out_features + j]);
    std::printf("\n");
  }
  ait_mlp_destroy(model);
  return 0;
}
