// 24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish reference, in double: t = clip(2·(x·Wᵀ + b) doubled,
// −10, 10), L = logsumexp over n of t (per row), out = L · mish(L).
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of N clipped logits in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[0]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1], N = call->inputs[1].shape[0];
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(call->inputs[1].data);  // (N, K): stored (out, in)
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);          // (M, 1)
  double* t = static_cast<double*>(call->workspace);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double h = double(bias[n]);
      for (int64_t k = 0; k < K; ++k) h += double(X[m * K + k]) * double(W[n * K + k]);
      double v = 2.0 * h;                              // scale_factor 2.0
      v = v + v;                                       // residual add: x + x
      t[n] = std::fmin(std::fmax(v, -10.0), 10.0);  // clamp [−10, 10]
    }
    double mx = t[0];
    for (int64_t n = 1; n < N; ++n) mx = t[n] > mx ? t[n] : mx;
    double sum = 0.0;
    for (int64_t n = 0; n < N; ++n) sum += std::exp(t[n] - mx);
    const double L = mx + std::log(sum);                                          // logsumexp, keepdims
    const double sp = std::fmax(L, 0.0) + std::log1p(std::exp(-std::fabs(L)));  // softplus = logaddexp(L, 0)
    Out[m] = float(L * (L * std::tanh(sp)));                                      // L · mish(L)
  }
  return 0;
}
