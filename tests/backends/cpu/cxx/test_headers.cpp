// The cpu library's plain C++ headers (templates/common/include, templates/cpu/include) on their
// own, as a build copies them: float16/bfloat16 conversions and errors (ait_common.h), buffers,
// workspace placement, the weights reader and the workspace pool (ait_runtime.h), the thread
// pool and the row splitting on it (ait_pool.h, ait_cpu.h), and our GEMM's panels with the
// per-handle cache of weight copies (ait_panel.h, ait_packed.h). Prints one line per failed
// check and exits non-zero when any failed; tests/backends/cpu/test_headers.py builds and runs it.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "ait_cpu.h"
#include "ait_runtime.h"

static int failures = 0;

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::printf("%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                          \
    }                                                                      \
  } while (0)

// -- ait_common.h ----------------------------------------------------------------------------

static void float16_and_bfloat16() {
  CHECK(ait::f32_to_f16(1.0f) == 0x3c00u && ait::f16_to_f32(0x3c00u) == 1.0f);
  CHECK(ait::f32_to_f16(-2.0f) == 0xc000u);
  CHECK(ait::f32_to_f16(65504.0f) == 0x7bffu);   // the largest float16
  CHECK(ait::f32_to_f16(65520.0f) == 0x7c00u);   // rounds to infinity
  CHECK(ait::f16_to_f32(0x0001u) == std::ldexp(1.0f, -24));  // the smallest subnormal
  CHECK(ait::f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000u);   // halfway to it: to even (zero)
  CHECK(ait::f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00u);  // tie: to even
  CHECK(ait::f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02u);
  CHECK(std::isnan(ait::f16_to_f32(ait::f32_to_f16(NAN))));
  CHECK(std::isinf(ait::f16_to_f32(ait::f32_to_f16(INFINITY))));
  for (uint32_t h = 0; h < 0x7c00u; ++h)  // every finite float16 survives the round trip
    if (ait::f32_to_f16(ait::f16_to_f32(static_cast<uint16_t>(h))) != h) {
      CHECK(false);
      break;
    }
  CHECK(ait::f32_to_bf16(1.0f) == 0x3f80u && ait::bf16_to_f32(0x3f80u) == 1.0f);
  CHECK(ait::f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80u);  // tie: to even
  CHECK(ait::f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82u);
  CHECK(std::isnan(ait::bf16_to_f32(ait::f32_to_bf16(NAN))));
  CHECK(ait::round_bf16(3.14159265f) == 3.140625f);
  CHECK(ait::round_f16(0.1f) == ait::f16_to_f32(0x2e66u));
}

static void errors_and_host_memory() {
  ait::clear_error();
  CHECK(ait::error_message[0] == '\0');
  CHECK(ait::fail(ait::ERROR_SHAPE, "dim %s = %d", "batch", 9) == ait::ERROR_SHAPE);
  CHECK(std::string(ait::error_message) == "dim batch = 9");
  std::thread other([] { CHECK(ait::error_message[0] == '\0'); });  // one message per thread
  other.join();
  void* small = ait::host_alloc(100);
  void* huge = ait::host_alloc(ait::kHugePage + 1);
  CHECK(small != nullptr && reinterpret_cast<uintptr_t>(small) % 64 == 0);
  CHECK(huge != nullptr && reinterpret_cast<uintptr_t>(huge) % ait::kHugePage == 0);
  std::free(small);
  std::free(huge);
}

// -- ait_runtime.h ---------------------------------------------------------------------------

static void buffers_and_placement() {
  CHECK(ait::align64(0) == 0 && ait::align64(1) == 64 && ait::align64(128) == 128);
  ait::Buffer buf;
  CHECK(buf.reserve(1000) && buf.size == 1000);
  char* first = buf.ptr;
  CHECK(buf.reserve(10) && buf.ptr == first && buf.size == 1000);  // only grows
  CHECK(buf.reserve(5000) && buf.size == 5000);

  // group 1 lives while 0 and 2 do; 0 and 2 never at once, so they share bytes
  const int64_t size[] = {256, 128, 192};
  const ait::Lifetime life[] = {{0, 1}, {0, 3}, {2, 3}};
  int64_t off[3];
  const int64_t top = ait::place(3, size, life, off);
  for (int a = 0; a < 3; ++a)
    for (int b = a + 1; b < 3; ++b)
      if (life[a].start <= life[b].end && life[b].start <= life[a].end)
        CHECK(off[a] + size[a] <= off[b] || off[b] + size[b] <= off[a]);
  CHECK(off[0] == 0 && off[1] == 256 && off[2] == 0 && top == 384);
  // a Placer kept between calls (a workspace's) places as a fresh one after other groups
  ait::Placer placer;
  const int64_t wide[] = {64, 640, 64, 128};
  const ait::Lifetime late[] = {{7, 9}, {0, 12}, {3, 3}, {9, 9}};
  int64_t other[4];
  CHECK(placer.place(4, wide, late, other) == 832 && other[1] == 0 && other[3] == 640 &&
        other[2] == 640 && other[0] == 768);
  int64_t again[3];
  CHECK(placer.place(3, size, life, again) == top && std::equal(off, off + 3, again));
  CHECK(ait::fnv1a64(reinterpret_cast<const unsigned char*>("a"), 1) == 0xaf63dc4c8601ec8cull);
}

static void weights_reader(const std::string& dir) {
  const std::string header = "{\"w\":{}}";
  const std::string path = dir + "/weights.safetensors";
  auto write = [&](int64_t data_bytes) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    const uint64_t len = header.size();
    for (int i = 0; i < 8; ++i) std::fputc(static_cast<int>((len >> (8 * i)) & 0xff), f);
    std::fwrite(header.data(), 1, header.size(), f);
    for (int64_t i = 0; i < data_bytes; ++i) std::fputc(static_cast<int>(i + 1), f);
    std::fclose(f);
  };
  const uint64_t hash = ait::fnv1a64(reinterpret_cast<const unsigned char*>(header.data()),
                                     header.size());
  const ait::WeightSlot slots[] = {{"a", 0, 4, 0}, {"b", 4, 4, 64}};
  ait::Buffer arena;
  write(8);
  CHECK(ait::load_weights(path.c_str(), header.size(), hash, 8, slots, 2, 128, arena) == ait::OK);
  CHECK(arena.ptr[0] == 1 && arena.ptr[3] == 4 && arena.ptr[64] == 5 && arena.ptr[67] == 8);
  CHECK(ait::load_weights(path.c_str(), header.size(), hash + 1, 8, slots, 2, 128, arena) ==
        ait::ERROR_WEIGHTS);  // another model's header
  write(7);
  CHECK(ait::load_weights(path.c_str(), header.size(), hash, 8, slots, 2, 128, arena) ==
        ait::ERROR_WEIGHTS);
  CHECK(std::string(ait::error_message).find("truncated") != std::string::npos);
  CHECK(ait::load_weights((dir + "/missing").c_str(), header.size(), hash, 8, slots, 2, 128,
                          arena) == ait::ERROR_WEIGHTS);
}

static void workspace_pool() {
  ait::Pool pool;
  ait::Workspace* first;
  {
    ait::Lease lease(pool);
    first = &lease.workspace();
    ait::Lease second(pool);  // a concurrent run gets its own
    CHECK(&second.workspace() != first);
  }
  CHECK(pool.idle.size() == 2);
  ait::Lease again(pool);  // returned workspaces are reused, the last returned first
  CHECK(&again.workspace() == first && pool.idle.size() == 1);
}

// -- ait_pool.h, ait_cpu.h -------------------------------------------------------------------

static void thread_pool() {
  for (int threads : {1, 2, 4}) {
    ait::ThreadPool pool(threads);
    CHECK(pool.size() == threads);
    ait::ThreadPool::Running running(pool);
    for (int64_t chunks : {1, 3, 64, 1000}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(chunks));
      std::atomic<int> bad_who{0};
      pool.run(chunks, [&](int64_t c, int who) {
        runs[static_cast<size_t>(c)].fetch_add(1);
        if (who < 0 || who >= pool.size()) bad_who.fetch_add(1);
      });
      bool once = true;
      for (auto& r : runs) once = once && r.load() == 1;
      CHECK(once && bad_who.load() == 0);  // every chunk exactly once, by a participant
    }
    std::atomic<int64_t> sum{0};  // two callers at once: the second runs its chunks itself
    std::thread other([&] { pool.run(100, [&](int64_t c, int) { sum.fetch_add(c); }); });
    pool.run(100, [&](int64_t c, int) { sum.fetch_add(c); });
    other.join();
    CHECK(sum.load() == 2 * 4950);
  }
  setenv("AIT_NUM_THREADS", "3", 1);
  CHECK(ait::default_threads() == 3);
  unsetenv("AIT_NUM_THREADS");
  CHECK(ait::default_threads() >= 1);
}

static void row_splitting() {
  for (int64_t n : {0, 1, 7, 100})
    for (int parts : {1, 3, 8}) {
      int64_t next = 0;
      for (int i = 0; i < parts; ++i) {
        int64_t lo, hi;
        ait::split(n, parts, i, lo, hi);
        CHECK(lo == next && hi >= lo && hi - lo <= n / parts + 1);
        next = hi;
      }
      CHECK(next == n);
    }
  ait::ThreadPool pool(2);
  ait::Ctx cx{nullptr, nullptr, 0, 2, &pool, nullptr};
  const int64_t rows = 37, cols = 1000;  // enough work to run on the pool
  std::vector<std::atomic<int>> hits(static_cast<size_t>(rows * cols));
  ait::for_rows(cx, rows, cols, 1, [&](int64_t r, int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) hits[static_cast<size_t>(r * cols + c)].fetch_add(1);
  });
  bool once = true;
  for (auto& h : hits) once = once && h.load() == 1;
  CHECK(once);
  // GEMM parts: the smaller operand duplicated, rows where each part gets at least 96 of them
  CHECK(ait::split_rows(300, 200, 4) && !ait::split_rows(40, 200, 2));
  CHECK(ait::split_rows(196, 672, 2) && !ait::split_rows(196, 672, 4));
  CHECK(ait::split_rows(16, 48, 2));  // too few columns to split
  int64_t m0, m1, n0, n1;
  ait::thread_part(196, 672, 1, 2, m0, m1, n0, n1);
  CHECK(m0 == 98 && m1 == 196 && n0 == 0 && n1 == 672);
  ait::thread_part(40, 200, 1, 2, m0, m1, n0, n1);
  CHECK(m0 == 0 && m1 == 40 && n0 == 112 && n1 == 200);
}

static void math() {
  for (float x = -20.0f; x <= 20.0f; x += 0.37f) {
    CHECK(std::fabs(ait::exp(x) - std::exp(x)) <= 4e-7f * std::exp(x));
    CHECK(std::fabs(ait::tanh(x) - std::tanh(x)) <= 2e-6f);
    CHECK(std::fabs(ait::gelu(x) - 0.5f * x * std::erfc(-x / std::sqrt(2.0f))) <=
          2e-6f * (1.0f + std::fabs(x)));
  }
  float row[5] = {1.0f, 2.0f, 3.0f, -1e30f, 3.0f};
  ait::softmax_row(row, 5);
  CHECK(std::fabs(row[0] + row[1] + row[2] + row[3] + row[4] - 1.0f) < 1e-6f);
  CHECK(row[3] == 0.0f && row[2] == row[4] && row[1] < row[2]);
  CHECK(ait::maximum(1.0f, NAN) != ait::maximum(1.0f, NAN));  // NaN propagates
}

// -- ait_panel.h, ait_packed.h ---------------------------------------------------------------

static void panels() {
  // rows past a multiple of 4 (AVX-512) and of 6 (AVX2: a last tile of one row and of two),
  // columns past 64 and past 16 (AVX2's panel), K past one pass of 1024 (both ISAs)
  const int64_t N = 70, K = 1030;
  std::vector<float> a(static_cast<size_t>(8 * K)), b(static_cast<size_t>(N * K));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5) % 13) * 0.25f - 1.5f;
  CHECK(ait::panel_floats(K, N) == 2 * 64 * K);  // N rounded up to 64 columns in every width
  for (bool trans : {false, true}) {  // B [K, N], or its transpose [N, K]
    const int64_t ldb = trans ? K : N;
    const float b01 = trans ? b[static_cast<size_t>(1 * ldb)] : b[1];  // B[0][1]
    const float b10 = trans ? b[1] : b[static_cast<size_t>(ldb)];      // B[1][0]
    for (int64_t width : {64, 16}) {  // AVX-512's panels and AVX2's
      std::vector<float> packed(static_cast<size_t>(ait::panel_floats(K, N)), -1.0f);
      ait::pack_panels(b.data(), K, N, ldb, trans, 0.5f, packed.data(), width);
      CHECK(std::count(packed.begin(), packed.end(), -1.0f) == 0);  // every float written
      CHECK(packed[static_cast<size_t>(64 * K + 6)] == 0.0f);  // column 70, k = 0: padding
      CHECK(packed[1] == 0.5f * b01 && packed[static_cast<size_t>(width)] == 0.5f * b10);
    }
#if AIT_PANEL_GEMM
    // each ISA's tiles, on panels of its width, where this CPU runs them
    using Gemm = void (*)(int64_t, int64_t, int64_t, const float*, int64_t, const float*, float*,
                          int64_t, bool);
    const std::tuple<bool, Gemm, int64_t> isas[] = {
        {ait::panel_avx512(), ait::panel_gemm_avx512, ait::PanelAvx512::kWidth},
        {ait::panel_avx2(), ait::panel_gemm_avx2, ait::PanelAvx2::kWidth}};
    for (const auto& [runs, gemm, width] : isas) {
      if (!runs) continue;
      std::vector<float> packed(static_cast<size_t>(ait::panel_floats(K, N)));
      ait::pack_panels(b.data(), K, N, ldb, trans, 0.5f, packed.data(), width);
      for (int64_t M : {7, 8})
        for (bool accumulate : {false, true}) {
          std::vector<float> c(static_cast<size_t>(M * N), accumulate ? 1.0f : 99.0f);
          gemm(M, N, K, a.data(), K, packed.data(), c.data(), N, accumulate);
          double worst = 0.0;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double want = accumulate ? 1.0 : 0.0;
              for (int64_t k = 0; k < K; ++k) {
                const size_t at = static_cast<size_t>(trans ? j * ldb + k : k * ldb + j);
                want += 0.5 * a[static_cast<size_t>(i * K + k)] * b[at];
              }
              worst = std::max(worst, std::fabs(c[static_cast<size_t>(i * N + j)] - want));
            }
          CHECK(worst == 0.0);  // sums of eighths below 2^12: exact in float32, in any order
        }
    }
#endif
  }
  ait::PackedWeights cache;  // one copy per (weight, slice, layout, scale), kept until destroyed
  const float* p = cache.panels(b.data(), K, N, N, false, 1.0f);
  CHECK(p != nullptr && cache.panels(b.data(), K, N, N, false, 1.0f) == p);
  CHECK(cache.panels(b.data(), K, N, N, false, 2.0f) != p);
  CHECK(cache.panels(b.data(), K, 64, N, false, 1.0f) != p);
  CHECK(p[0] == b[0] && p[ait::panel_width()] == b[static_cast<size_t>(N)]);  // k = 1 of panel 0
#ifndef AIT_MKL
  CHECK(cache.get(b.data(), K, N, N, false, 1.0f) == nullptr);  // no packed BLAS layout
#endif
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  float16_and_bfloat16();
  errors_and_host_memory();
  buffers_and_placement();
  weights_reader(dir);
  workspace_pool();
  thread_pool();
  row_splitting();
  math();
  panels();
  std::printf("%s\n", failures == 0 ? "ok" : "failed");
  return failures == 0 ? 0 : 1;
}
