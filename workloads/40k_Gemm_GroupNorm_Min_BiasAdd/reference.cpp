// 40k_Gemm_GroupNorm_Min_BiasAdd reference: r[m] = min over n of GroupNorm16(x·Wᵀ + lb)[m, n], then
// out[0, c, m, 0] = r[m] + bias[c]; W stored (out, in); in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of N pre-activations and the M row minima, in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[0] + call->inputs[0].shape[0]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t N = call->inputs[1].shape[0];
  const int64_t group = 16;  // features per GroupNorm group
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* lb = static_cast<const float*>(call->inputs[2].data);
  const float* gamma = static_cast<const float*>(call->inputs[3].data);  // gn_weight
  const float* beta = static_cast<const float*>(call->inputs[4].data);   // gn_bias
  const float* bias = static_cast<const float*>(call->inputs[5].data);   // (1, N, 1, 1)
  float* Out = static_cast<float*>(call->outputs[0].data);               // (1, N, M, 1)
  double* h = static_cast<double*>(call->workspace);
  double* r = h + N;
  const double eps = 1e-5;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = double(lb[n]);
      for (int64_t k = 0; k < K; ++k) acc += double(X[m * K + k]) * double(W[n * K + k]);
      h[n] = acc;
    }
    double row_min = INFINITY;
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
        row_min = y < row_min ? y : row_min;
      }
    }
    r[m] = row_min;
  }
  for (int64_t c = 0; c < N; ++c)
    for (int64_t m = 0; m < M; ++m) Out[c * M + m] = float(r[m] + double(bias[c]));
  return 0;
}
