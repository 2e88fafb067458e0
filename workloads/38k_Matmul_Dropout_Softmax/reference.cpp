// 38k_Matmul_Dropout_Softmax reference: out = softmax over n of x·Wᵀ + b (identity dropout), per row,
// in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of N logits / probabilities in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[0]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1], N = call->inputs[1].shape[0];
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(call->inputs[1].data);  // (N, K)
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* h = static_cast<double*>(call->workspace);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = double(bias[n]);
      for (int64_t k = 0; k < K; ++k) acc += double(X[m * K + k]) * double(W[n * K + k]);
      h[n] = acc;  // dropout in inference mode: the identity
    }
    double mx = h[0];
    for (int64_t n = 1; n < N; ++n) mx = std::fmax(mx, h[n]);
    double sum = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      h[n] = std::exp(h[n] - mx);
      sum += h[n];
    }
    for (int64_t n = 0; n < N; ++n) Out[m * N + n] = float(h[n] / sum);
  }
  return 0;
}
