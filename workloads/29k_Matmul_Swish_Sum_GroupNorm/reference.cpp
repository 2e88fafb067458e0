// 29k_Matmul_Swish_Sum_GroupNorm reference: s = swish(x·W) + b, then GroupNorm over 64 groups of
// N/64 features with an affine, per row, in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of N activations in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[1]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1], N = call->inputs[1].shape[1];
  const int64_t groups = 64, S = N / groups;  // features per group
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(call->inputs[1].data);  // (K, N)
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  const float* gamma = static_cast<const float*>(call->inputs[3].data);
  const float* beta = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* s = static_cast<double*>(call->workspace);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) s[n] = 0.0;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) s[n] += double(X[m * K + k]) * double(W[k * N + n]);
    }
    for (int64_t n = 0; n < N; ++n) s[n] = s[n] / (1.0 + std::exp(-s[n])) + double(bias[n]);  // swish + b
    for (int64_t g = 0; g < groups; ++g) {
      double mean = 0.0, var = 0.0;
      for (int64_t n = g * S; n < (g + 1) * S; ++n) mean += s[n];
      mean /= double(S);
      for (int64_t n = g * S; n < (g + 1) * S; ++n) var += (s[n] - mean) * (s[n] - mean);
      var /= double(S);
      const double inv_std = 1.0 / std::sqrt(var + 1e-5);
      for (int64_t n = g * S; n < (g + 1) * S; ++n)
        Out[m * N + n] = float((s[n] - mean) * inv_std * double(gamma[n]) + double(beta[n]));
    }
  }
  return 0;
}
