// 31k_Gemm_BatchNorm_GELU_ReLU reference: h = x·Wᵀ, training-mode BatchNorm over the M rows with an
// affine, then relu(gelu_tanh(·)), in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The whole (M, N) pre-activation in double: the batch statistics need every row.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * uint64_t(call->inputs[1].shape[0]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1], N = call->inputs[1].shape[0];
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(call->inputs[1].data);  // (N, K)
  const float* gamma = static_cast<const float*>(call->inputs[2].data);
  const float* beta = static_cast<const float*>(call->inputs[3].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* H = static_cast<double*>(call->workspace);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += double(X[m * K + k]) * double(W[n * K + k]);
      H[m * N + n] = acc;
    }
  }
  const double c = 0.7978845608028654;  // √(2/π)
  for (int64_t n = 0; n < N; ++n) {
    double mean = 0.0, var = 0.0;
    for (int64_t m = 0; m < M; ++m) mean += H[m * N + n];
    mean /= double(M);
    for (int64_t m = 0; m < M; ++m) var += (H[m * N + n] - mean) * (H[m * N + n] - mean);
    var /= double(M);
    const double inv_std = 1.0 / std::sqrt(var + 1e-5);
    for (int64_t m = 0; m < M; ++m) {
      const double t = (H[m * N + n] - mean) * inv_std * double(gamma[n]) + double(beta[n]);
      const double g = 0.5 * t * (1.0 + std::tanh(c * (t + 0.044715 * t * t * t)));  // gelu
      Out[m * N + n] = float(std::fmax(g, 0.0));                                      // relu
    }
  }
  return 0;
}
