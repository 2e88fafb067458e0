// 22k_Conv2d_InstanceNorm_Divide baseline: one oneDNN convolution on the user's NCHW / OIHW tensors
// straight into the output, then one OpenMP loop over (sample, channel) planes that computes the
// plane's mean and variance (two passes, the plane is in cache) and normalizes, applies the affine and
// the division in place.
#include <opbench/kernel.h>
#include <dnnl.hpp>
#include <omp.h>
#include <cmath>
#include <map>
#include <vector>

OB_DEFINE_ABI_VERSION()

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// The engine, and per shape the primitive: created once, like a compiled XLA executable. oneDNN is
// capped at AVX2 + FMA, the instruction set every kernel is built for (the machine has AVX-512); the
// cap can only be set before oneDNN's first JIT in the process, so a refusal (the process already
// fixed it, e.g. ONEDNN_MAX_CPU_ISA or an earlier baseline) is not an error.
dnnl::engine& cpu_engine() {
  static dnnl::engine eng = [] {
    try {
      dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
    } catch (const dnnl::error&) {
    }
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return eng;
}

struct Conv {
  dnnl::memory::desc src, wei, dst;
  dnnl::convolution_forward prim;
};

// Without a bias: InstanceNorm's mean subtraction cancels a conv bias exactly.
const Conv& conv_for(int64_t N, int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t K) {
  static std::map<std::vector<int64_t>, Conv> cache;
  const std::vector<int64_t> key{N, Cin, H, W, Cout, K};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Conv c;
  c.src = dnnl::memory::desc({N, Cin, H, W}, dt::f32, tag::nchw);
  c.wei = dnnl::memory::desc({Cout, Cin, K, K}, dt::f32, tag::oihw);
  c.dst = dnnl::memory::desc({N, Cout, H - K + 1, W - K + 1}, dt::f32, tag::nchw);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, c.src,
                                    c.wei, c.dst, {1, 1}, {0, 0}, {0, 0});
  c.prim = dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(d, cpu_engine()));
  return cache.emplace(key, std::move(c)).first->second;
}

}  // namespace

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], H = x.shape[2], W = x.shape[3], Cout = w.shape[0], K = w.shape[2];
  const int64_t P = (H - K + 1) * (W - K + 1);
  const float* __restrict in_weight = static_cast<const float*>(call->inputs[2].data);
  const float* __restrict in_bias = static_cast<const float*>(call->inputs[3].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  omp_set_num_threads(call->num_threads);  // oneDNN (OpenMP build) runs on the caller's thread count
  try {
    const Conv& c = conv_for(N, x.shape[1], H, W, Cout, K);
    dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
    c.prim.execute(s, {{DNNL_ARG_SRC, dnnl::memory(c.src, eng, x.data)},
                       {DNNL_ARG_WEIGHTS, dnnl::memory(c.wei, eng, w.data)},
                       {DNNL_ARG_DST, dnnl::memory(c.dst, eng, Out)}});
    s.wait();
  } catch (const dnnl::error&) {
    return 1;
  }
  const float eps = 1e-5f, divide_by = 2.0f;
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t plane = 0; plane < N * Cout; ++plane) {
    float* __restrict o = Out + plane * P;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < P; ++i) sum += o[i];
    const float mean = sum / float(P);
    float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < P; ++i) sq += (o[i] - mean) * (o[i] - mean);
    const float scale = in_weight[plane % Cout] / (std::sqrt(sq / float(P) + eps) * divide_by);
    const float shift = in_bias[plane % Cout] / divide_by;
#pragma omp simd
    for (int64_t i = 0; i < P; ++i) o[i] = (o[i] - mean) * scale + shift;
  }
  return 0;
}
