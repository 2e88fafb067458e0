// 35k_Gemm_Scaling_Hardtanh_GELU reference: out = gelu_tanh(clip(0.5·(x·W + b), -2, 2)), per row, in
// double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of N pre-activations in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[1]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1], N = call->inputs[1].shape[1];
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(call->inputs[1].data);  // (K, N)
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* h = static_cast<double*>(call->workspace);
  const double c = 0.7978845608028654;  // √(2/π)
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) h[n] = double(bias[n]);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) h[n] += double(X[m * K + k]) * double(W[k * N + n]);
    }
    for (int64_t n = 0; n < N; ++n) {
      const double t = std::fmin(std::fmax(0.5 * h[n], -2.0), 2.0);  // scaling, hardtanh
      Out[m * N + n] = float(0.5 * t * (1.0 + std::tanh(c * (t + 0.044715 * t * t * t))));  // gelu
    }
  }
  return 0;
}
