// 44k_Matmul_Divide_GELU reference: out = gelu_tanh((x·W + b) / 10), W stored (in, out), in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of N pre-activations in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[1]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t N = call->inputs[1].shape[1];
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* h = static_cast<double*>(call->workspace);
  const double divisor = 10.0;
  const double c = 0.7978845608028654;  // √(2/π)
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) h[n] = double(bias[n]);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) h[n] += double(X[m * K + k]) * double(W[k * N + n]);
    }
    for (int64_t n = 0; n < N; ++n) {
      const double t = h[n] / divisor;
      Out[m * N + n] = float(0.5 * t * (1.0 + std::tanh(c * (t + 0.044715 * t * t * t))));
    }
  }
  return 0;
}
