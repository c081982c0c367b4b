// ResNet-50's conv shapes through oneDNN's convolution primitive, one layer at a time: the
// measure behind docs/benchmarks.md's note on oneDNN as a conv library for the cpu targets (not
// used by ait-build). Each layer runs 20 timed calls after 3 untimed ones, with ReLU fused,
// weights in the layout oneDNN picks, activations NHWC (as ours) or blocked (`b`: its choice).
//
//   pip download --no-deps onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
//   (unzip both wheels; D=.../onednn_devel_cpu_gomp-2023.2.0.data/data,
//    L=.../onednn_cpu_gomp-2023.2.0.data/data/lib)
//   g++ -O2 -std=c++17 bench/onednn_convs.cpp -I$D/include -L$L -ldnnl -Wl,-rpath,$L -o convs
//   OMP_NUM_THREADS=2 ./convs 1 [b]     # batch 1; b: blocked activations
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Layer {
  const char* name;
  int c, h, o, k, stride, pad;
};

int main(int argc, char** argv) {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const int n = argc > 1 ? std::atoi(argv[1]) : 1;
  const bool blocked = argc > 2 && argv[2][0] == 'b';
  const std::vector<Layer> layers = {
      {"conv1 7x7/2", 3, 224, 64, 7, 2, 3},     {"layer1 3x3", 64, 56, 64, 3, 1, 1},
      {"layer1 1x1 256>64", 256, 56, 64, 1, 1, 0}, {"layer2 3x3", 128, 28, 128, 3, 1, 1},
      {"layer3 1x1 1024>256", 1024, 14, 256, 1, 1, 0}, {"layer3 3x3", 256, 14, 256, 3, 1, 1},
      {"layer3 1x1 256>1024", 256, 14, 1024, 1, 1, 0}, {"layer4 3x3", 512, 7, 512, 3, 1, 1}};
  for (const Layer& l : layers) {
    const int ho = (l.h + 2 * l.pad - l.k) / l.stride + 1;
    const tag act = blocked ? tag::any : tag::nhwc;
    memory::desc src({n, l.c, l.h, l.h}, dt::f32, act);
    memory::desc wei({l.o, l.c, l.k, l.k}, dt::f32, tag::any);
    memory::desc bias({l.o}, dt::f32, tag::x);
    memory::desc dst({n, l.o, ho, ho}, dt::f32, act);
    post_ops ops;
    ops.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
    primitive_attr attr;
    attr.set_post_ops(ops);
    const auto pd = convolution_forward::primitive_desc(
        eng, prop_kind::forward_inference, algorithm::convolution_direct, src, wei, bias, dst,
        {l.stride, l.stride}, {l.pad, l.pad}, {l.pad, l.pad}, attr);
    memory ms(pd.src_desc(), eng), mw(pd.weights_desc(), eng), mb(bias, eng), md(pd.dst_desc(), eng);
    const auto fill = [](memory& m, float v) {
      float* p = static_cast<float*>(m.get_data_handle());
      std::fill(p, p + m.get_desc().get_size() / sizeof(float), v);
    };
    fill(ms, 0.5f);
    fill(mw, 0.01f);
    fill(mb, 0.0f);
    convolution_forward conv(pd);
    std::vector<double> ms_taken;
    for (int i = 0; i < 23; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      conv.execute(s, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb},
                       {DNNL_ARG_DST, md}});
      s.wait();
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (i >= 3) ms_taken.push_back(t);
    }
    std::sort(ms_taken.begin(), ms_taken.end());
    std::printf("%-20s batch %d %-7s min %.3f median %.3f ms  (%s)\n", l.name, n,
                blocked ? "blocked" : "nhwc", ms_taken.front(), ms_taken[ms_taken.size() / 2],
                pd.impl_info_str());
  }
  return 0;
}
