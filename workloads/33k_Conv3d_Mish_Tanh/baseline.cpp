// 33k_Conv3d_Mish_Tanh baseline: one oneDNN 3-D convolution (with the bias) on the user's NCDHW /
// OIDHW tensors straight into the output, then one vectorized OpenMP loop that applies Mish and tanh
// in place. (oneDNN's eltwise_mish + eltwise_tanh post-ops on the gemm-based convolution it picks for
// plain layouts measured 3-4x slower than conv + this loop at the cpu size.)
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

const Conv& conv_for(int64_t N, int64_t Cin, int64_t D, int64_t H, int64_t W, int64_t Cout, int64_t K) {
  static std::map<std::vector<int64_t>, Conv> cache;
  const std::vector<int64_t> key{N, Cin, D, H, W, Cout, K};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Conv c;
  c.src = dnnl::memory::desc({N, Cin, D, H, W}, dt::f32, tag::ncdhw);
  c.wei = dnnl::memory::desc({Cout, Cin, K, K, K}, dt::f32, tag::oidhw);
  c.bias = dnnl::memory::desc({Cout}, dt::f32, tag::x);
  c.dst = dnnl::memory::desc({N, Cout, D - K + 1, H - K + 1, W - K + 1}, dt::f32, tag::ncdhw);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, c.src,
                                    c.wei, c.bias, c.dst, {1, 1, 1}, {0, 0, 0}, {0, 0, 0});
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

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  float* __restrict out = static_cast<float*>(call->outputs[0].data);
  omp_set_num_threads(call->num_threads);  // oneDNN (OpenMP build) runs on the caller's thread count
  try {
    const Conv& c = conv_for(x.shape[0], x.shape[1], x.shape[2], x.shape[3], x.shape[4], w.shape[0], w.shape[2]);
    dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
    c.prim.execute(s, {{DNNL_ARG_SRC, dnnl::memory(c.src, eng, x.data)},
                       {DNNL_ARG_WEIGHTS, dnnl::memory(c.wei, eng, w.data)},
                       {DNNL_ARG_BIAS, dnnl::memory(c.bias, eng, call->inputs[2].data)},
                       {DNNL_ARG_DST, dnnl::memory(c.dst, eng, out)}});
    s.wait();
  } catch (const dnnl::error&) {
    return 1;
  }
  const int64_t total = ob_numel(&call->outputs[0]);
#pragma omp parallel for simd schedule(static) num_threads(call->num_threads)
  for (int64_t i = 0; i < total; ++i) {
    const float c = out[i];
    // tanh(softplus(c)) = q / (q + 2) with q = e^c·(e^c + 2); for c ≥ 20 it is 1 in fp32.
    const float e = vexp(c < 20.0f ? c : 20.0f);
    const float q = e * (e + 2.0f);
    const float m = c * q / (q + 2.0f);             // mish(c)
    out[i] = 1.0f - 2.0f / (vexp(2.0f * m) + 1.0f);  // tanh(m)
  }
  return 0;
}
