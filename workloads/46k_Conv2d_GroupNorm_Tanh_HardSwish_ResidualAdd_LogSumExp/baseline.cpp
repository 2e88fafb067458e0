// 46k_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp baseline: one oneDNN convolution (with the
// bias) on the user's NCHW / OIHW tensors into the workspace; one OpenMP loop over (sample, group) for
// the GroupNorm statistics (sums in double), folded with the affine into a per-(sample, channel) scale
// and shift; and one OpenMP loop over (sample, block of positions) that forms r = c + hardswish(tanh(·))
// for all channels of the block in a thread-private buffer (L1/L2-resident), then the logsumexp over
// channels, vectorized across positions.
#include <opbench/kernel.h>
#include <dnnl.hpp>
#include <omp.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <vector>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int64_t kGroups = 16;
constexpr int64_t kBlock = 128;  // positions per task of the channel loop

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

struct Layout {  // the workspace: conv output, per-(sample, channel) scale and shift, per-thread blocks
  int64_t N, Cout, P;
  size_t conv_floats() const { return size_t((N * Cout * P + 15) / 16 * 16); }
  size_t affine_floats() const { return size_t((2 * N * Cout + 15) / 16 * 16); }
  size_t block_floats() const { return size_t(Cout * kBlock + 2 * kBlock); }
};

Layout layout_of(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t K = w.shape[2];
  return {x.shape[0], w.shape[0], (x.shape[2] - K + 1) * (x.shape[3] - K + 1)};
}

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const Layout l = layout_of(call);
  return (l.conv_floats() + l.affine_floats() + size_t(call->num_threads) * l.block_floats()) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const Layout l = layout_of(call);
  const int64_t N = l.N, Cout = l.Cout, P = l.P, Cg = Cout / kGroups;
  const float* __restrict gn_weight = static_cast<const float*>(call->inputs[3].data);
  const float* __restrict gn_bias = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* c = static_cast<float*>(call->workspace);
  float* scale = c + l.conv_floats();  // (N, Cout): ĉ = c·scale + shift, affine included
  float* shift = scale + N * Cout;
  float* blocks = c + l.conv_floats() + l.affine_floats();
  omp_set_num_threads(call->num_threads);  // oneDNN (OpenMP build) runs on the caller's thread count
  try {
    const Conv& cv = conv_for(N, x.shape[1], x.shape[2], x.shape[3], Cout, w.shape[2]);
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
  const int64_t nblocks = (P + kBlock - 1) / kBlock;
#pragma omp parallel num_threads(call->num_threads)
  {
#pragma omp for schedule(static)
    for (int64_t ng = 0; ng < N * kGroups; ++ng) {
      const float* __restrict cg = c + ng * Cg * P;  // the group's channels are contiguous
      double s = 0.0, sq = 0.0;
#pragma omp simd reduction(+ : s, sq)
      for (int64_t i = 0; i < Cg * P; ++i) {
        s += double(cg[i]);
        sq += double(cg[i]) * double(cg[i]);
      }
      const double count = double(Cg * P), mean = s / count;
      const double inv_std = 1.0 / std::sqrt(sq / count - mean * mean + 1e-5);  // fine in double here
      for (int64_t j = 0; j < Cg; ++j) {
        const int64_t o = (ng % kGroups) * Cg + j, n = ng / kGroups;
        scale[n * Cout + o] = float(inv_std * double(gn_weight[o]));
        shift[n * Cout + o] = float(double(gn_bias[o]) - mean * inv_std * double(gn_weight[o]));
      }
    }
    float* __restrict r = blocks + size_t(omp_get_thread_num()) * l.block_floats();  // (Cout, kBlock)
    float* __restrict mx = r + Cout * kBlock;
    float* __restrict sum = mx + kBlock;
#pragma omp for schedule(static)
    for (int64_t task = 0; task < N * nblocks; ++task) {
      const int64_t n = task / nblocks, p0 = (task % nblocks) * kBlock, len = std::min(kBlock, P - p0);
      for (int64_t i = 0; i < len; ++i) mx[i] = -INFINITY;
      for (int64_t o = 0; o < Cout; ++o) {
        const float* __restrict v = c + (n * Cout + o) * P + p0;
        const float a = scale[n * Cout + o], b = shift[n * Cout + o];
        float* __restrict ro = r + o * kBlock;
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) {
          const float t = 1.0f - 2.0f / (vexp(2.0f * (v[i] * a + b)) + 1.0f);  // tanh(ĉ)
          const float u = t + 3.0f;
          const float hs = t * (u < 0.0f ? 0.0f : (u > 6.0f ? 6.0f : u)) / 6.0f;  // hardswish
          ro[i] = v[i] + hs;                                                     // residual
          mx[i] = ro[i] > mx[i] ? ro[i] : mx[i];
        }
      }
      for (int64_t i = 0; i < len; ++i) sum[i] = 0.0f;
      for (int64_t o = 0; o < Cout; ++o) {
        const float* __restrict ro = r + o * kBlock;
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) sum[i] += vexp(ro[i] - mx[i]);
      }
      for (int64_t i = 0; i < len; ++i) Out[n * P + p0 + i] = mx[i] + std::log(sum[i]);
    }
  }
  return 0;
}
