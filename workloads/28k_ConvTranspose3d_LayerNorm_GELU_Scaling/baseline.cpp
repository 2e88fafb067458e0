// 28k_ConvTranspose3d_LayerNorm_GELU_Scaling baseline: one oneDNN deconvolution (kernel 4, stride 2,
// padding 1; oneDNN's deconvolution is PyTorch's ConvTranspose3d) on the user's NCDHW x and
// (Cin, Cout, kd, kh, kw) weights (format iodhw) straight into the output, then one OpenMP loop over
// width rows that applies the LayerNorm, the GELU and the scaling in place.
#include <opbench/kernel.h>
#include <dnnl.hpp>
#include <omp.h>
#include <bit>
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

struct Deconv {
  dnnl::memory::desc src, wei, dst;
  dnnl::deconvolution_forward prim;
};

// No bias: JAXBench's conv bias is per channel, and the LayerNorm over width cancels it.
const Deconv& deconv_for(int64_t N, int64_t Cin, int64_t D, int64_t H, int64_t W, int64_t Cout, int64_t K) {
  static std::map<std::vector<int64_t>, Deconv> cache;
  const std::vector<int64_t> key{N, Cin, D, H, W, Cout, K};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Deconv c;
  c.src = dnnl::memory::desc({N, Cin, D, H, W}, dt::f32, tag::ncdhw);
  c.wei = dnnl::memory::desc({Cout, Cin, K, K, K}, dt::f32, tag::iodhw);  // stored (Cin, Cout, K, K, K)
  c.dst = dnnl::memory::desc({N, Cout, 2 * D, 2 * H, 2 * W}, dt::f32, tag::ncdhw);
  dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                      c.src, c.wei, c.dst, {2, 2, 2}, {1, 1, 1}, {1, 1, 1});
  c.prim = dnnl::deconvolution_forward(dnnl::deconvolution_forward::primitive_desc(d, cpu_engine()));
  return cache.emplace(key, std::move(c)).first->second;
}

// exp as compilers emit it for fused loops: XLA and PyTorch use a vectorized polynomial, while glibc's
// expf and tanhf are scalar without -ffast-math. Cephes range reduction and polynomial, relative error
// < 1e-7 on [-87, 88]; written so that `omp simd` vectorizes it (see 50k_Matmul_GELU_Softmax).
inline float vexp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = std::fma(x, 1.44269504f, 12582912.0f) - 12582912.0f;
  const float r = std::fma(n, 2.12194440e-4f, std::fma(n, -0.693359375f, x));
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r) + 1.0f;                           // e^r ≈ 1 + r + r²·p(r)
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);  // · 2^n
}

}  // namespace

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const ob_tensor& out = call->outputs[0];
  const int64_t OW = out.shape[4];
  const int64_t rows = out.shape[0] * out.shape[1] * out.shape[2] * out.shape[3];
  const float* __restrict ln_weight = static_cast<const float*>(call->inputs[2].data);
  const float* __restrict ln_bias = static_cast<const float*>(call->inputs[3].data);
  float* Out = static_cast<float*>(out.data);
  omp_set_num_threads(call->num_threads);  // oneDNN (OpenMP build) runs on the caller's thread count
  try {
    const Deconv& c = deconv_for(x.shape[0], x.shape[1], x.shape[2], x.shape[3], x.shape[4], w.shape[1], w.shape[2]);
    dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
    c.prim.execute(s, {{DNNL_ARG_SRC, dnnl::memory(c.src, eng, x.data)},
                       {DNNL_ARG_WEIGHTS, dnnl::memory(c.wei, eng, w.data)},
                       {DNNL_ARG_DST, dnnl::memory(c.dst, eng, Out)}});
    s.wait();
  } catch (const dnnl::error&) {
    return 1;
  }
  const float eps = 1e-5f, scaling_factor = 1.0f, k = 2.0f * 0.7978845608f;  // 2·√(2/π)
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t row = 0; row < rows; ++row) {
    float* __restrict v = Out + row * OW;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t q = 0; q < OW; ++q) sum += v[q];
    const float mean = sum / float(OW);
    float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
    for (int64_t q = 0; q < OW; ++q) sq += (v[q] - mean) * (v[q] - mean);
    const float inv_std = 1.0f / std::sqrt(sq / float(OW) + eps);
#pragma omp simd
    for (int64_t q = 0; q < OW; ++q) {
      const float t = (v[q] - mean) * inv_std * ln_weight[q] + ln_bias[q];
      // gelu(t) = 0.5·t·(1 + tanh(u)) = t·sigmoid(2u), u = √(2/π)·(t + 0.044715·t³)
      v[q] = t / (1.0f + vexp(-k * (t + 0.044715f * t * t * t))) * scaling_factor;
    }
  }
  return 0;
}
