// oneDNN's convolution inside a built ResNet-50, for the A/B behind docs/benchmarks.md's "oneDNN
// in the model" (bench/results/cpu/onednn_sliced_ab_b1.log, _b8.log). Not used by ait-build. Each
// pool participant calls oneDNN 3.2 (onednn-cpu-gomp 2023.2.0) single-threaded
// (omp_set_num_threads(1) on its thread) on its share of the N*HO output rows: whole images where
// it has them (dense NHWC), else rows of one image with the input rows they need and asymmetric
// padding. Primitives and reordered weights are cached; each thread has its own scratchpad, as
// primitives run concurrently.
//
// How the A/B was made: copy build/cpu_mkl/resnet50_float32 (main at 7d6c89f); replace the body of
// every non-Winograd conv kernel in src/ with
//   return ait_dnnl::conv(cx, out, x, w, bias, <res or nullptr>, N, H, W, C, HO, WO, O,
//                         KH, KW, SH, SW, PH, PW, <relu?>);
// (its constants from the kernel's own constexpr lines) and #include "onednn_sliced_conv.h";
// compile those sources with the manifest's flags plus -I<onednn-devel>/include, link all objects
// with -ldnnl -lgomp and the MKL layers, rewrite libresnet50_float32.so.sha256; then
//   python bench/cpu_ab.py build/cpu_mkl/resnet50_float32 COPY --batch 1 --runs 20 --nodes
#pragma once
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>
#include "ait_cpu.h"

namespace ait_dnnl {
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

inline engine& eng() { static engine e(engine::kind::cpu, 0); return e; }

struct Prim { convolution_forward conv; memory::desc wd, sd; };
using Key = std::tuple<const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int>;

inline std::mutex& mu() { static std::mutex m; return m; }
inline std::map<Key, Prim>& prims() { static std::map<Key, Prim> p; return p; }
struct WeightEntry { const float* w; memory::desc d; memory m; };
inline std::vector<WeightEntry>& weights() { static std::vector<WeightEntry> w; return w; }

inline void one_thread() {
  thread_local bool set = false;
  if (!set) { omp_set_num_threads(1); set = true; }
}

// nb images of ih rows (pads pt/pb) -> oh rows
inline void conv_rows(const float* x, const float* w, const float* bias, float* out, const float* res, bool accumulated,
                      int64_t nb, int64_t ih, int64_t W, int64_t C, int64_t oh, int64_t WO, int64_t O,
                      int KH, int KW, int SH, int SW, int pt, int pb, int PW, bool relu) {
  one_thread();
  const Key key{w, nb, ih, W, C, oh, pt, pb, res ? (accumulated ? 2 : 1) : 0, relu, 0};
  Prim* p;
  memory wmem;
  {
    std::lock_guard<std::mutex> lk(mu());
    auto it = prims().find(key);
    if (it == prims().end()) {
      memory::desc src({nb, C, ih, W}, dt::f32, tag::nhwc), dst({nb, O, oh, WO}, dt::f32, tag::nhwc);
      memory::desc wany({O, C, KH, KW}, dt::f32, tag::any), bd({O}, dt::f32, tag::x);
      post_ops ops;
      if (res && accumulated) ops.append_sum(1.f);
      if (res && !accumulated) ops.append_binary(algorithm::binary_add, dst);
      if (relu) ops.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
      primitive_attr attr;
      attr.set_post_ops(ops);
      attr.set_scratchpad_mode(scratchpad_mode::user);
      auto pd = convolution_forward::primitive_desc(eng(), prop_kind::forward_inference, algorithm::convolution_direct,
                                                    src, wany, bd, dst, {SH, SW}, {pt, PW}, {pb, PW}, attr);
      it = prims().emplace(key, Prim{convolution_forward(pd), pd.weights_desc(), pd.scratchpad_desc()}).first;
    }
    p = &it->second;
    bool found = false;
    for (WeightEntry& e : weights())
      if (e.w == w && e.d == p->wd) { wmem = e.m; found = true; break; }
    if (!found) {
      memory src_w({{O, C, KH, KW}, dt::f32, tag::hwio}, eng(), const_cast<float*>(w));
      memory dst_w(p->wd, eng());
      stream s(eng());
      reorder(src_w, dst_w).execute(s, src_w, dst_w);
      s.wait();
      weights().push_back(WeightEntry{w, p->wd, dst_w});
      wmem = dst_w;
    }
  }
  thread_local stream s(eng());
  memory ms({{nb, C, ih, W}, dt::f32, tag::nhwc}, eng(), const_cast<float*>(x));
  memory md({{nb, O, oh, WO}, dt::f32, tag::nhwc}, eng(), out);
  memory mb({{O}, dt::f32, tag::x}, eng(), const_cast<float*>(bias));
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}};
  if (res && !accumulated) {
    memory mr({{nb, O, oh, WO}, dt::f32, tag::nhwc}, eng(), const_cast<float*>(res));
    args.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mr});
  }
  thread_local std::vector<char> pad;
  if (pad.size() < p->sd.get_size()) pad.resize(p->sd.get_size());
  args.insert({DNNL_ARG_SCRATCHPAD, memory(p->sd, eng(), pad.data())});
  p->conv.execute(s, args);
}

// the whole conv: parts of the N*HO output rows, each cut into image pieces
inline int conv(const ait::Ctx& cx, float* out, const float* x, const float* w, const float* bias, const float* res,
                int64_t N, int64_t H, int64_t W, int64_t C, int64_t HO, int64_t WO, int64_t O,
                int KH, int KW, int SH, int SW, int PH, int PW, bool relu) {
  const bool accumulated = res != nullptr && res == out;
  const int nt = cx.nthreads;
  auto rows = [&](int64_t n0, int64_t nb, int64_t oh0, int64_t oh1) {
    const int64_t top = oh0 * SH - PH, bot = (oh1 - 1) * SH - PH + KH;  // input rows [top, bot)
    const bool whole = oh0 == 0 && oh1 == HO;  // images keep their H rows: nb of them are dense
    const int64_t ih0 = std::max<int64_t>(0, top), ih1 = whole ? H : std::min<int64_t>(H, bot);
    const size_t o = ((n0 * HO + oh0) * WO) * O;
    conv_rows(x + (n0 * H + ih0) * W * C, w, bias, out + o, res ? res + o : nullptr, accumulated, nb, ih1 - ih0, W, C,
              oh1 - oh0, WO, O, KH, KW, SH, SW, (int)(ih0 - top), (int)std::max<int64_t>(0, bot - ih1), PW, relu);
  };
  ait::parallel_for(cx, nt, nt > 1, [&](int64_t part, int) {
    int64_t lo, hi;
    ait::split(N * HO, nt, (int)part, lo, hi);
    while (lo < hi) {
      const int64_t n = lo / HO, oh = lo % HO;
      if (oh == 0 && hi - lo >= HO) {  // whole images
        const int64_t nb = (hi - lo) / HO;
        rows(n, nb, 0, HO);
        lo += nb * HO;
      } else {
        const int64_t end = std::min(hi, (n + 1) * HO);
        rows(n, 1, oh, end - n * HO);
        lo = end;
      }
    }
  });
  return 0;
}
}  // namespace ait_dnnl
