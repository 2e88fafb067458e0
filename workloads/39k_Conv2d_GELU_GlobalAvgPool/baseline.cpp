// 39k_Conv2d_GELU_GlobalAvgPool baseline: one oneDNN convolution (with the bias) on the user's NCHW /
// OIHW tensors into the workspace, then one OpenMP loop over (sample, channel) planes that sums the
// vectorized GELU of the plane and divides by its size.
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

struct Conv {
  dnnl::memory::desc src, wei, bias, dst;
  dnnl::convolution_forward prim;
};

const Conv& conv_for(int64_t N, int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t K) {
  static std::map<std::vector<int64_t>, Conv> cache;
  const std::vector<int64_t> key{N, Cin, H, W, Cout, K};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Conv c;
  c.src = dnnl::memory::desc({N, Cin, H, W}, dt::f32, tag::nchw);
  c.wei = dnnl::memory::desc({Cout, Cin, K, K}, dt::f32, tag::oihw);
  c.bias = dnnl::memory::desc({Cout}, dt::f32, tag::x);
  c.dst = dnnl::memory::desc({N, Cout, H - K + 1, W - K + 1}, dt::f32, tag::nchw);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, c.src,
                                    c.wei, c.bias, c.dst, {1, 1}, {0, 0}, {0, 0});
  c.prim = dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(d, cpu_engine()));
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

// The conv output (N, Cout, OH, OW).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t K = w.shape[2];
  return uint64_t(x.shape[0] * w.shape[0] * (x.shape[2] - K + 1) * (x.shape[3] - K + 1)) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], H = x.shape[2], W = x.shape[3], Cout = w.shape[0], K = w.shape[2];
  const int64_t P = (H - K + 1) * (W - K + 1);
  float* c = static_cast<float*>(call->workspace);
  float* Out = static_cast<float*>(call->outputs[0].data);
  omp_set_num_threads(call->num_threads);  // oneDNN (OpenMP build) runs on the caller's thread count
  try {
    const Conv& cv = conv_for(N, x.shape[1], H, W, Cout, K);
    dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
    cv.prim.execute(s, {{DNNL_ARG_SRC, dnnl::memory(cv.src, eng, x.data)},
                        {DNNL_ARG_WEIGHTS, dnnl::memory(cv.wei, eng, w.data)},
                        {DNNL_ARG_BIAS, dnnl::memory(cv.bias, eng, call->inputs[2].data)},
                        {DNNL_ARG_DST, dnnl::memory(cv.dst, eng, c)}});
    s.wait();
  } catch (const dnnl::error&) {
    return 1;
  }
  const float k = 2.0f * 0.7978845608f;  // 2·√(2/π)
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t plane = 0; plane < N * Cout; ++plane) {
    const float* __restrict v = c + plane * P;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < P; ++i) {
      const float t = v[i];
      sum += t / (1.0f + vexp(-k * (t + 0.044715f * t * t * t)));  // gelu(t) = t·sigmoid(2·√(2/π)·(t + 0.044715·t³))
    }
    Out[plane] = sum / float(P);
  }
  return 0;
}
