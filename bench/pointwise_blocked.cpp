// A 1x1 conv (NHWC) with bias, optional residual and ReLU on one core, ResNet-50's shapes at batch
// 1: MKL's sgemm (plain "mkl", and on weights packed once, "mklP") in row chunks plus an epilogue
// pass, as the cpu target does, against register tiles of 6 pixels x 64 channels with the
// epilogue fused, the weights packed per 64 output channels ([O/64][K][64], so a tile's panel is
// contiguous) and K taken in chunks whose panel fits L1. Variants: dRxV kKC mMB = rows of MB
// pixels, K chunks of KC, 64-channel panels inside; moRxV kKC = each 6-pixel tile across all
// panels before the next; nchwc = the 6 x 64 tile on blocked-channel data (below), its
// activations in the layout ONNX Runtime's convs use. Mode "hot": shapes whose data stay in L2,
// "model": the real row counts.
// An experiment for docs/benchmarks.md (issue 14), not used by the product. Build line:
//   g++ -O3 -std=c++17 -mavx512f -mavx512vl -mfma -fopenmp-simd -ffp-contract=fast \
//     -I$PREFIX/include pointwise_blocked.cpp -L$PREFIX/lib -l:libmkl_intel_lp64.so.3 \
//     -l:libmkl_sequential.so.3 -l:libmkl_core.so.3 -Wl,-rpath,$PREFIX/lib -o pointwise_blocked
//   ./pointwise_blocked model; ./pointwise_blocked hot
#include <mkl_cblas.h>
#include <mkl_service.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include <cmath>
typedef float vec16 __attribute__((vector_size(64)));

// weights packed [O/(16V)][K][16V]; partial sums over k in [k0,k1); first: start from zero, last: epilogue
template <int R, int V>
static inline void tile(int K, int k0, int k1, const float* a, const float* wp, const float* bias, const float* res, float* dst, int O, bool first, bool last) {
  vec16 acc[R][V];
  if (first) { for (int r = 0; r < R; ++r) for (int v = 0; v < V; ++v) acc[r][v] = vec16{}; }
  else { for (int r = 0; r < R; ++r) for (int v = 0; v < V; ++v) std::memcpy(&acc[r][v], dst + r * O + 16 * v, 64); }
  const float* b = wp + (size_t)k0 * 16 * V;
  for (int t = k0; t < k1; ++t, b += 16 * V) {
    vec16 bv[V];
    for (int v = 0; v < V; ++v) std::memcpy(&bv[v], b + 16 * v, 64);
    for (int r = 0; r < R; ++r) { const float x = a[r * K + t]; for (int v = 0; v < V; ++v) acc[r][v] += x * bv[v]; }
  }
  if (last) {
    for (int r = 0; r < R; ++r) for (int v = 0; v < V; ++v) {
      vec16 bb, q; std::memcpy(&bb, bias + 16 * v, 64);
      vec16 s = acc[r][v] + bb;
      if (res) { std::memcpy(&q, res + r * O + 16 * v, 64); s += q; }
      s = s > 0 ? s : vec16{};
      std::memcpy(dst + r * O + 16 * v, &s, 64);
    }
  } else {
    for (int r = 0; r < R; ++r) for (int v = 0; v < V; ++v) std::memcpy(dst + r * O + 16 * v, &acc[r][v], 64);
  }
}
// one tile of `rows` (at most R) pixels x 16V channels at pixel m, channel o0, K chunk [k0, k1)
template <int R, int V>
static void tile_at(int rows, int m, int o0, int k0, int k1, int K, int O, const float* x,
                    const float* wp, const float* bias, const float* res, float* out) {
  const float* w = wp + (size_t)o0 * K;
  const float* rr = res ? res + (size_t)m * O + o0 : nullptr;
  const float* a = x + (size_t)m * K;
  float* d = out + (size_t)m * O + o0;
  const bool f = k0 == 0, l = k1 == K;
  switch (rows) {
#define C_(n) case n: if (n <= R) tile<(n <= R ? n : 1), V>(K, k0, k1, a, w, bias + o0, rr, d, O, f, l); break;
    C_(14) C_(13) C_(12) C_(11) C_(10) C_(9) C_(8) C_(7) C_(6) C_(5) C_(4) C_(3) C_(2) C_(1)
#undef C_
  }
}
// rows of MB pixels; in each, K chunks; in each, 64-channel panels, each down the rows
template <int R, int V>
static void direct(int M, int K, int O, int KC, int MB, const float* x, const float* wp, const float* bias, const float* res, float* out) {
  for (int m0 = 0; m0 < M; m0 += MB) {
    const int m1 = std::min(M, m0 + MB);
    for (int k0 = 0; k0 < K; k0 += KC)
      for (int o0 = 0; o0 < O; o0 += 16 * V)
        for (int m = m0; m < m1; m += R)
          tile_at<R, V>(std::min(R, m1 - m), m, o0, k0, std::min(K, k0 + KC), K, O, x, wp, bias, res, out);
  }
}
// K chunks; in each, every 6-pixel tile across all panels before the next tile
template <int R, int V>
static void direct_mo(int M, int K, int O, int KC, int, const float* x, const float* wp, const float* bias, const float* res, float* out) {
  for (int k0 = 0; k0 < K; k0 += KC)
    for (int m = 0; m < M; m += R)
      for (int o0 = 0; o0 < O; o0 += 16 * V)
        tile_at<R, V>(std::min(R, M - m), m, o0, k0, std::min(K, k0 + KC), K, O, x, wp, bias, res, out);
}
// The same tile on blocked-channel (NCHWc) data, ONNX Runtime's layout for convs: x [K/16][M][16],
// out and res [O/16][M][16], so a tile's pixels are contiguous within each 16-channel block.
// Weights as above ([O/64][K][64]), all of K at once.
template <int R>
static inline void tile_nc(int M, int K, const float* x, int m, const float* w, const float* bias,
                           const float* res, float* out, int ob) {
  vec16 acc[R][4];
  for (int r = 0; r < R; ++r) for (int v = 0; v < 4; ++v) acc[r][v] = vec16{};
  for (int kb = 0; kb < K / 16; ++kb) {
    const float* xb = x + ((size_t)kb * M + m) * 16;
    const float* wb = w + (size_t)kb * 16 * 64;
    for (int k = 0; k < 16; ++k) {
      vec16 bv[4];
      for (int v = 0; v < 4; ++v) std::memcpy(&bv[v], wb + k * 64 + 16 * v, 64);
      for (int r = 0; r < R; ++r) { const float xv = xb[r * 16 + k]; for (int v = 0; v < 4; ++v) acc[r][v] += xv * bv[v]; }
    }
  }
  for (int v = 0; v < 4; ++v) {
    vec16 bb; std::memcpy(&bb, bias + 16 * v, 64);
    const size_t plane = ((size_t)(ob * 4 + v) * M + m) * 16;
    for (int r = 0; r < R; ++r) {
      vec16 sum = acc[r][v] + bb;
      if (res) { vec16 q; std::memcpy(&q, res + plane + r * 16, 64); sum += q; }
      sum = sum > 0 ? sum : vec16{};
      std::memcpy(out + plane + r * 16, &sum, 64);
    }
  }
}
// each 64-channel block of the output down all pixels, 6 at a time (K and O multiples of 16 and 64)
static void nchwc(int M, int K, int O, const float* x, const float* wp, const float* bias, const float* res, float* out) {
  for (int ob = 0; ob < O / 64; ++ob) {
    const float* w = wp + (size_t)ob * 64 * K;
    int m = 0;
    for (; m + 6 <= M; m += 6) tile_nc<6>(M, K, x, m, w, bias + ob * 64, res, out, ob);
    for (; m < M; ++m) tile_nc<1>(M, K, x, m, w, bias + ob * 64, res, out, ob);
  }
}
// [M][C] -> [C/16][M][16]
static std::vector<float> blocked(const std::vector<float>& a, int M, int C) {
  std::vector<float> b(a.size());
  for (int m = 0; m < M; ++m) for (int c = 0; c < C; ++c) b[((size_t)(c / 16) * M + m) * 16 + c % 16] = a[(size_t)m * C + c];
  return b;
}
static void epi(float* c, const float* bias, const float* r, int rows, int N, int ld) {
  for (int i = 0; i < rows; ++i) {
    float* cc = c + (size_t)i * ld; const float* rr = r ? r + (size_t)i * ld : nullptr;
#pragma omp simd
    for (int j = 0; j < N; ++j) { float v = cc[j] + bias[j] + (rr ? rr[j] : 0.f); cc[j] = v > 0 ? v : 0; }
  }
}
static void mkl_path(int M, int K, int N, const float* x, const float* w, const float* packed, const float* bias, const float* res, float* out) {
  const int chunk = std::max(128, (1 << 17) / N);
  for (int m = 0; m < M; m += chunk) {
    const int rows = std::min(chunk, M - m);
    if (packed) cblas_sgemm_compute(CblasRowMajor, CblasNoTrans, CblasPacked, rows, N, K, x + (size_t)m * K, K, packed, N, 0.0f, out + (size_t)m * N, N);
    else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, N, K, 1.0f, x + (size_t)m * K, K, w, N, 0.0f, out + (size_t)m * N, N);
    epi(out + (size_t)m * N, bias, res ? res + (size_t)m * N : nullptr, rows, N, N);
  }
}
typedef void (*DirectFn)(int, int, int, int, int, const float*, const float*, const float*, const float*, float*);
struct Variant { const char* name; DirectFn fn; int V; int KC; int MB; };
static double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static void run(const char* label, int M, int K, int O, bool with_res, const std::vector<Variant>& vs, int iters) {
  std::vector<float> x((size_t)M * K), w((size_t)K * O), bias(O), res((size_t)M * O), o1((size_t)M * O), o2((size_t)M * O);
  srand(1);
  for (auto& v : x) v = rand() / (float)RAND_MAX - 0.5f;
  for (auto& v : w) v = rand() / (float)RAND_MAX - 0.5f;
  for (auto& v : bias) v = rand() / (float)RAND_MAX - 0.5f;
  for (auto& v : res) v = rand() / (float)RAND_MAX - 0.5f;
  float* packed = (float*)mkl_malloc(cblas_sgemm_pack_get_size(CblasBMatrix, M, O, K), 64);
  cblas_sgemm_pack(CblasRowMajor, CblasBMatrix, CblasNoTrans, M, O, K, 1.0f, w.data(), O, packed);
  const float* r = with_res ? res.data() : nullptr;
  const std::vector<float> xc = blocked(x, M, K), rc = blocked(res, M, O);
  std::vector<float> o3((size_t)M * O);
  int nv = 3 + vs.size();  // mkl, mklP, the NHWC variants, then the NCHWc tile
  std::vector<std::vector<double>> t(nv);
  std::vector<std::vector<float>> wps;
  for (auto& v : vs) {  // pack per panel width
    int P = 16 * v.V; std::vector<float> wp((size_t)K * O);
    for (int o0 = 0; o0 < O; o0 += P) for (int k = 0; k < K; ++k) for (int j = 0; j < P; ++j) wp[(size_t)o0 * K + (size_t)k * P + j] = w[(size_t)k * O + o0 + j];
    wps.push_back(wp);
  }
  double maxdiff = 0;
  for (int it = 0; it < iters; ++it) {
    for (int s = 0; s < nv; ++s) {
      double t0 = now_ms();
      if (s == 0) mkl_path(M, K, O, x.data(), w.data(), nullptr, bias.data(), r, o1.data());
      else if (s == 1) mkl_path(M, K, O, x.data(), w.data(), packed, bias.data(), r, o1.data());
      else if (s < nv - 1) { auto& v = vs[s - 2]; v.fn(M, K, O, v.KC, v.MB, x.data(), wps[s - 2].data(), bias.data(), r, o2.data()); }
      else nchwc(M, K, O, xc.data(), wps[0].data(), bias.data(), with_res ? rc.data() : nullptr, o3.data());  // vs[0] has V = 4
      t[s].push_back(now_ms() - t0);
      if (s >= 2 && s < nv - 1 && it == 0) for (size_t i = 0; i < o1.size(); ++i) maxdiff = std::max(maxdiff, (double)std::fabs(o1[i] - o2[i]));
      if (s == nv - 1 && it == 0) {
        const std::vector<float> o1c = blocked(o1, M, O);
        for (size_t i = 0; i < o1c.size(); ++i) maxdiff = std::max(maxdiff, (double)std::fabs(o1c[i] - o3[i]));
      }
    }
  }
  double gf = 2.0 * M * K * O / 1e6;
  printf("%-22s M=%5d K=%4d O=%4d res=%d |", label, M, K, O, (int)with_res);
  for (int s = 0; s < nv; ++s) { std::sort(t[s].begin(), t[s].end()); printf(" %s %.3f(%3.0f)", s == 0 ? "mkl" : s == 1 ? "mklP" : s == nv - 1 ? "nchwc" : vs[s - 2].name, t[s][iters / 2], gf / t[s][iters / 2]); }
  printf(" | diff %.1g\n", maxdiff);
  mkl_free(packed);
}
int main(int argc, char** argv) {
  mkl_set_num_threads(1);
  const bool hot = argc > 1 && std::strcmp(argv[1], "hot") == 0;
  std::vector<Variant> vs = {
    {"d6x4k128m96", direct<6, 4>, 4, 128, 96},
    {"d6x4k64m96", direct<6, 4>, 4, 64, 96},
    {"mo6x4k128", direct_mo<6, 4>, 4, 128, 0},
  };
  struct S { const char* l; int hw, K, O; bool res; };
  const S model[] = {{"l1 64->64", 3136, 64, 64, 0}, {"l1 64->256 res", 3136, 64, 256, 1},
                     {"l1 256->64", 3136, 256, 64, 0}, {"l2.0 256->128", 3136, 256, 128, 0},
                     {"l2 128->512 res", 784, 128, 512, 1}, {"l2 512->128", 784, 512, 128, 0},
                     {"l3.0 512->256", 784, 512, 256, 0}, {"l3 256->1024 res", 196, 256, 1024, 1},
                     {"l3 1024->256", 196, 1024, 256, 0}, {"l4.0 1024->512", 196, 1024, 512, 0},
                     {"l4 512->2048 res", 49, 512, 2048, 1}, {"l4 2048->512", 49, 2048, 512, 0}};
  const S in_l2[] = {{"hot 64->256", 392, 64, 256, 0}, {"hot 64->256 res", 392, 64, 256, 1},
                     {"hot 256->64", 392, 256, 64, 0}};
  if (hot) for (const S& s : in_l2) run(s.l, s.hw, s.K, s.O, s.res, vs, 41);
  else for (const S& s : model) run(s.l, s.hw, s.K, s.O, s.res, vs, 15);
  return 0;
}
