// 46k_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp reference: c = conv(x, W) + b (VALID,
// stride 1, NCHW / OIHW); GroupNorm with 16 groups and its affine; t = tanh; hardswish; r = c + that
// (residual from the pre-norm conv output); out = logsumexp over channels at each position, in double.
#include <opbench/kernel.h>
#include <cmath>
#include <cstdint>

OB_DEFINE_ABI_VERSION()

constexpr int64_t kGroups = 16;

// One sample's conv output (Cout, OH, OW) in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t K = w.shape[2];
  return uint64_t(w.shape[0] * (x.shape[2] - K + 1) * (x.shape[3] - K + 1)) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], Cin = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Cout = w.shape[0], K = w.shape[2];
  const int64_t OH = H - K + 1, OW = W - K + 1, P = OH * OW;
  const int64_t Cg = Cout / kGroups;  // channels per group
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* b = static_cast<const float*>(call->inputs[2].data);
  const float* gn_weight = static_cast<const float*>(call->inputs[3].data);
  const float* gn_bias = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);  // (N, 1, OH, OW)
  double* c = static_cast<double*>(call->workspace);
  const double eps = 1e-5;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < Cout; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xo = 0; xo < OW; ++xo) {
          double acc = double(b[o]);
          for (int64_t ci = 0; ci < Cin; ++ci)
            for (int64_t dy = 0; dy < K; ++dy)
              for (int64_t dx = 0; dx < K; ++dx)
                acc += double(X[((n * Cin + ci) * H + y + dy) * W + xo + dx]) *
                       double(Wt[((o * Cin + ci) * K + dy) * K + dx]);
          c[o * P + y * OW + xo] = acc;
        }
    for (int64_t g = 0; g < kGroups; ++g) {  // c becomes r = c + hardswish(tanh(GroupNorm(c)))
      double* cg = c + g * Cg * P;           // the group's channels are contiguous
      double mean = 0.0;
      for (int64_t i = 0; i < Cg * P; ++i) mean += cg[i];
      mean = mean / double(Cg * P);
      double var = 0.0;  // biased (population) variance
      for (int64_t i = 0; i < Cg * P; ++i) {
        const double d = cg[i] - mean;
        var += d * d;
      }
      var = var / double(Cg * P);
      const double inv_std = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < Cg * P; ++i) {
        const int64_t o = g * Cg + i / P;
        const double t = std::tanh((cg[i] - mean) * inv_std * double(gn_weight[o]) + double(gn_bias[o]));
        const double r6 = t + 3.0 < 0.0 ? 0.0 : (t + 3.0 > 6.0 ? 6.0 : t + 3.0);  // clamp(t + 3, 0, 6)
        cg[i] = cg[i] + t * r6 / 6.0;                                             // residual + hardswish
      }
    }
    for (int64_t p = 0; p < P; ++p) {  // logsumexp over the channels
      double m = c[p];
      for (int64_t o = 1; o < Cout; ++o) m = c[o * P + p] > m ? c[o * P + p] : m;
      double s = 0.0;
      for (int64_t o = 0; o < Cout; ++o) s += std::exp(c[o * P + p] - m);
      Out[n * P + p] = float(m + std::log(s));
    }
  }
  return 0;
}
