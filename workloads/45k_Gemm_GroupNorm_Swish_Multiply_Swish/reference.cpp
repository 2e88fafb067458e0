// 45k_Gemm_GroupNorm_Swish_Multiply_Swish reference: out = swish(swish(GroupNorm32(x·Wᵀ + b)) · mw),
// W stored (out, in), in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of N pre-activations in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[0]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t N = call->inputs[1].shape[0];
  const int64_t group = 32;  // features per GroupNorm group
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  const float* gamma = static_cast<const float*>(call->inputs[3].data);  // gn_weight
  const float* beta = static_cast<const float*>(call->inputs[4].data);   // gn_bias
  const float* mw = static_cast<const float*>(call->inputs[5].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* h = static_cast<double*>(call->workspace);
  const double eps = 1e-5;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = double(bias[n]);
      for (int64_t k = 0; k < K; ++k) acc += double(X[m * K + k]) * double(W[n * K + k]);
      h[n] = acc;
    }
    for (int64_t g0 = 0; g0 < N; g0 += group) {
      double mean = 0.0;
      for (int64_t n = g0; n < g0 + group; ++n) mean += h[n];
      mean = mean / double(group);
      double var = 0.0;
      for (int64_t n = g0; n < g0 + group; ++n) var += (h[n] - mean) * (h[n] - mean);
      var = var / double(group);
      const double inv_std = 1.0 / std::sqrt(var + eps);
      for (int64_t n = g0; n < g0 + group; ++n) {
        const double y = (h[n] - mean) * inv_std * double(gamma[n]) + double(beta[n]);
        const double s = y / (1.0 + std::exp(-y)) * double(mw[n]);  // swish, multiply
        Out[m * N + n] = float(s / (1.0 + std::exp(-s)));            // swish
      }
    }
  }
  return 0;
}
