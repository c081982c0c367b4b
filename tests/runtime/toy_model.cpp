// A hand-written library with the generated C API's shape, so the Python runtime is tested
// without the code generator: y = x * w (w: 4 floats from the weights file) and
// count[b] = sum of tokens[b*seq .. b*seq+seq). A negative token is a run-time error.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace {
thread_local std::string last_error;
int fail(const std::string& message) { last_error = message; return 1; }
}

struct ait_toy { float w[4]; };

extern "C" {
int ait_toy_create(const char* weights_path, ait_toy** out) {
  if (!weights_path || !out) return fail("null argument");
  FILE* f = std::fopen(weights_path, "rb");
  if (!f) return fail(std::string("cannot open ") + weights_path);
  ait_toy m;
  size_t got = std::fread(m.w, 1, sizeof m.w, f);
  bool longer = std::fgetc(f) != EOF;
  std::fclose(f);
  if (got != sizeof m.w || longer) return fail("weights file has the wrong size");
  *out = new ait_toy(m);
  return 0;
}

int ait_toy_run(ait_toy* m, const int64_t* dims, const void* const* inputs, void* const* outputs,
                void* stream) {
  (void)stream;
  if (!m) return fail("null model");
  int64_t batch = dims[0], seq = dims[1];
  const float* x = static_cast<const float*>(inputs[0]);
  const int64_t* tokens = static_cast<const int64_t*>(inputs[1]);
  float* y = static_cast<float*>(outputs[0]);
  float* count = static_cast<float*>(outputs[1]);
  for (int64_t b = 0; b < batch; ++b) {
    for (int j = 0; j < 4; ++j) y[b * 4 + j] = x[b * 4 + j] * m->w[j];
    float sum = 0;
    for (int64_t s = 0; s < seq; ++s) {
      int64_t t = tokens[b * seq + s];
      if (t < 0) return fail("token " + std::to_string(t) + " is negative");
      sum += static_cast<float>(t);
    }
    count[b] = sum;
  }
  return 0;
}

void ait_toy_destroy(ait_toy* m) { delete m; }

const char* ait_toy_last_error(void) { return last_error.c_str(); }

const char* ait_toy_build_id(void) { return TOY_BUILD_ID; }
}
