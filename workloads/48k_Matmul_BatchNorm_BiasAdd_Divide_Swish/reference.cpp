// 48k_Matmul_BatchNorm_BiasAdd_Divide_Swish reference: out = swish((BN_eval(x·W + lb) + bias) / 2),
// W stored (in, out), in double.
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
  const float* lb = static_cast<const float*>(call->inputs[2].data);
  const float* gamma = static_cast<const float*>(call->inputs[3].data);  // bn_scale
  const float* beta = static_cast<const float*>(call->inputs[4].data);   // bn_bias
  const float* mean = static_cast<const float*>(call->inputs[5].data);   // bn_mean
  const float* var = static_cast<const float*>(call->inputs[6].data);    // bn_var
  const double bias = double(static_cast<const float*>(call->inputs[7].data)[0]);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* h = static_cast<double*>(call->workspace);
  const double eps = 1e-5, divide_value = 2.0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) h[n] = double(lb[n]);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) h[n] += double(X[m * K + k]) * double(W[k * N + n]);
    }
    for (int64_t n = 0; n < N; ++n) {
      const double y = double(gamma[n]) * (h[n] - double(mean[n])) / std::sqrt(double(var[n]) + eps) + double(beta[n]);
      const double t = (y + bias) / divide_value;
      Out[m * N + n] = float(t / (1.0 + std::exp(-t)));  // swish
    }
  }
  return 0;
}
