// 25k_Conv3d_GroupNorm_Mean baseline: one oneDNN 3-D convolution (with the conv bias) on the user's
// NCDHW / OIDHW tensors into the workspace, then one OpenMP loop over (sample, group) that reads the
// group's channels twice (per-channel sums, then the centered sum of squares; the group is L2-resident)
// and adds the group's share of Σ (ĉ·gamma + beta), and a last loop that divides by C·D·H·W.
// Sums are accumulated in double: the group mean is subtracted from per-channel sums of ~2e4 values.
#include <opbench/kernel.h>
#include <dnnl.hpp>
#include <omp.h>
#include <cmath>
#include <map>
#include <vector>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int64_t kGroups = 8;

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

int64_t positions(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t K = call->inputs[1].shape[2];
  return (x.shape[2] - K + 1) * (x.shape[3] - K + 1) * (x.shape[4] - K + 1);
}

}  // namespace

// The conv output (N, Cout, OD, OH, OW), then one double per (sample, group).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t N = call->inputs[0].shape[0], Cout = call->inputs[1].shape[0];
  return uint64_t(N * Cout * positions(call)) * sizeof(float) + uint64_t(N * kGroups) * sizeof(double) + 64;
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], Cout = w.shape[0], P = positions(call), Cg = Cout / kGroups;
  if (Cg > 64) return 2;  // channel_sum below holds up to 64 channels per group
  const float* __restrict gamma = static_cast<const float*>(call->inputs[3].data);
  const float* __restrict beta = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* c = static_cast<float*>(call->workspace);
  double* group_sum = reinterpret_cast<double*>(c + ((N * Cout * P + 15) / 16) * 16);
  omp_set_num_threads(call->num_threads);  // oneDNN (OpenMP build) runs on the caller's thread count
  try {
    const Conv& cv = conv_for(N, x.shape[1], x.shape[2], x.shape[3], x.shape[4], Cout, w.shape[2]);
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
  const double eps = 1e-5;
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t ng = 0; ng < N * kGroups; ++ng) {
    const int64_t o0 = (ng % kGroups) * Cg;
    const float* __restrict cg = c + ng * Cg * P;  // the group's Cg channels are contiguous
    double channel_sum[64], sum = 0.0;
    for (int64_t j = 0; j < Cg; ++j) {
      double s = 0.0;
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < P; ++i) s += double(cg[j * P + i]);
      channel_sum[j] = s;
      sum += s;
    }
    const double mean = sum / double(Cg * P);
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < Cg * P; ++i) sq += (double(cg[i]) - mean) * (double(cg[i]) - mean);
    const double inv_std = 1.0 / std::sqrt(sq / double(Cg * P) + eps);
    // Σ over the group of (c - mean)·inv_std·gamma[o] + beta[o], from the channel sums.
    double y = 0.0;
    for (int64_t j = 0; j < Cg; ++j)
      y += (channel_sum[j] - double(P) * mean) * inv_std * double(gamma[o0 + j]) + double(P) * double(beta[o0 + j]);
    group_sum[ng] = y;
  }
  for (int64_t n = 0; n < N; ++n) {
    double total = 0.0;
    for (int64_t g = 0; g < kGroups; ++g) total += group_sum[n * kGroups + g];
    Out[n] = float(total / double(Cout * P));
  }
  return 0;
}
