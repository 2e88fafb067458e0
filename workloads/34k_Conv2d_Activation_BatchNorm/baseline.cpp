// 34k_Conv2d_Activation_BatchNorm baseline: one oneDNN convolution (with the bias) on the user's NCHW
// / OIHW tensors straight into the output; one OpenMP loop over (sample, channel) planes that applies
// Mish in place and sums each plane and its squares (in double); the per-channel batch statistics; and
// one OpenMP loop that normalizes with the BatchNorm affine in place.
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

// Per (sample, channel) plane: the sum and the sum of squares of its Mish outputs; then per channel
// the BatchNorm scale and shift.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t N = call->inputs[0].shape[0], Cout = call->inputs[1].shape[0];
  return uint64_t(2 * N * Cout + 2 * Cout) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], H = x.shape[2], W = x.shape[3], Cout = w.shape[0], K = w.shape[2];
  const int64_t P = (H - K + 1) * (W - K + 1);
  const float* __restrict bn_weight = static_cast<const float*>(call->inputs[3].data);
  const float* __restrict bn_bias = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* plane_sum = static_cast<double*>(call->workspace);
  double* plane_sq = plane_sum + N * Cout;
  double* scale = plane_sq + N * Cout;
  double* shift = scale + Cout;
  omp_set_num_threads(call->num_threads);  // oneDNN (OpenMP build) runs on the caller's thread count
  try {
    const Conv& c = conv_for(N, x.shape[1], H, W, Cout, K);
    dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
    c.prim.execute(s, {{DNNL_ARG_SRC, dnnl::memory(c.src, eng, x.data)},
                       {DNNL_ARG_WEIGHTS, dnnl::memory(c.wei, eng, w.data)},
                       {DNNL_ARG_BIAS, dnnl::memory(c.bias, eng, call->inputs[2].data)},
                       {DNNL_ARG_DST, dnnl::memory(c.dst, eng, Out)}});
    s.wait();
  } catch (const dnnl::error&) {
    return 1;
  }
#pragma omp parallel num_threads(call->num_threads)
  {
#pragma omp for schedule(static)
    for (int64_t plane = 0; plane < N * Cout; ++plane) {
      float* __restrict v = Out + plane * P;
      double s = 0.0, sq = 0.0;
#pragma omp simd reduction(+ : s, sq)
      for (int64_t i = 0; i < P; ++i) {
        const float c = v[i];
        // tanh(softplus(c)) = q / (q + 2) with q = e^c·(e^c + 2); for c ≥ 20 it is 1 in fp32.
        const float e = vexp(c < 20.0f ? c : 20.0f);
        const float q = e * (e + 2.0f);
        const float m = c * q / (q + 2.0f);
        v[i] = m;
        s += double(m);
        sq += double(m) * double(m);
      }
      plane_sum[plane] = s;
      plane_sq[plane] = sq;
    }
#pragma omp for schedule(static)
    for (int64_t o = 0; o < Cout; ++o) {
      double s = 0.0, sq = 0.0;
      for (int64_t n = 0; n < N; ++n) {
        s += plane_sum[n * Cout + o];
        sq += plane_sq[n * Cout + o];
      }
      const double count = double(N * P), mean = s / count;
      const double var = sq / count - mean * mean;  // fine in double: |mean| and std are O(1)
      scale[o] = double(bn_weight[o]) / std::sqrt(var + 1e-5);
      shift[o] = double(bn_bias[o]) - mean * scale[o];
    }
#pragma omp for schedule(static)
    for (int64_t plane = 0; plane < N * Cout; ++plane) {
      float* __restrict v = Out + plane * P;
      const float a = float(scale[plane % Cout]), b = float(shift[plane % Cout]);
#pragma omp simd
      for (int64_t i = 0; i < P; ++i) v[i] = v[i] * a + b;
    }
  }
  return 0;
}
