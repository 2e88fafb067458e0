// 32k_Gemm_Sigmoid_LogSumExp reference: out[m] = logsumexp_n(sigmoid(x·W1ᵀ + b1)·W2ᵀ + b2), per row,
// in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of H hidden activations and one of N logits, in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[0] + call->inputs[3].shape[0]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1];
  const int64_t H = call->inputs[1].shape[0], N = call->inputs[3].shape[0];
  const float* X = static_cast<const float*>(x.data);
  const float* W1 = static_cast<const float*>(call->inputs[1].data);  // (H, K)
  const float* b1 = static_cast<const float*>(call->inputs[2].data);
  const float* W2 = static_cast<const float*>(call->inputs[3].data);  // (N, H)
  const float* b2 = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);  // (M,)
  double* s = static_cast<double*>(call->workspace);
  double* z = s + H;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t j = 0; j < H; ++j) {
      double a = double(b1[j]);
      for (int64_t k = 0; k < K; ++k) a += double(X[m * K + k]) * double(W1[j * K + k]);
      s[j] = 1.0 / (1.0 + std::exp(-a));  // sigmoid
    }
    for (int64_t n = 0; n < N; ++n) {
      double acc = double(b2[n]);
      for (int64_t j = 0; j < H; ++j) acc += s[j] * double(W2[n * H + j]);
      z[n] = acc;
    }
    double mx = z[0];
    for (int64_t n = 1; n < N; ++n) mx = std::fmax(mx, z[n]);
    double sum = 0.0;
    for (int64_t n = 0; n < N; ++n) sum += std::exp(z[n] - mx);
    Out[m] = float(mx + std::log(sum));
  }
  return 0;
}
