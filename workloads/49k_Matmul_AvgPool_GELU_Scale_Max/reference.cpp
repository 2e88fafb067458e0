// 49k_Matmul_AvgPool_GELU_Scale_Max reference: out[m] = max over j of 2·gelu_tanh(average of 16
// consecutive features of x·W + b), W stored (in, out), in double. The full GEMM, as written.
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
  const int64_t pool = 16;  // pool_kernel_size
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* h = static_cast<double*>(call->workspace);
  const double scale = 2.0;
  const double c = 0.7978845608028654;  // √(2/π)
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) h[n] = double(bias[n]);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) h[n] += double(X[m * K + k]) * double(W[k * N + n]);
    }
    double mx = -INFINITY;
    for (int64_t j0 = 0; j0 < N; j0 += pool) {
      double sum = 0.0;
      for (int64_t n = j0; n < j0 + pool; ++n) sum += h[n];
      const double p = sum / double(pool);
      const double g = 0.5 * p * (1.0 + std::tanh(c * (p + 0.044715 * p * p * p)));  // gelu
      const double v = scale * g;
      mx = v > mx ? v : mx;
    }
    Out[m] = float(mx);
  }
  return 0;
}
