// 47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh reference: out = clip(gelu_tanh(tanh(swish(x·W + b + add))),
// -1, 1), W stored (in, out), in double.
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
  const float* add_value = static_cast<const float*>(call->inputs[3].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* h = static_cast<double*>(call->workspace);
  const double c = 0.7978845608028654;  // √(2/π)
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) h[n] = 0.0;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) h[n] += double(X[m * K + k]) * double(W[k * N + n]);
    }
    for (int64_t n = 0; n < N; ++n) {
      const double t = h[n] + double(bias[n]) + double(add_value[n]);
      const double s = t / (1.0 + std::exp(-t));                                // swish
      const double u = std::tanh(s);
      double g = 0.5 * u * (1.0 + std::tanh(c * (u + 0.044715 * u * u * u)));  // gelu, tanh form
      g = g < -1.0 ? -1.0 : (g > 1.0 ? 1.0 : g);                               // hardtanh
      Out[m * N + n] = float(g);
    }
  }
  return 0;
}
