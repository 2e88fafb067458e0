// 26k_BMM_InstanceNorm_Sum_ResidualAdd_Multiply reference, in double: h = x·Wᵀ + b (M, N), viewed as
// (M, C, 8, 8) with C = N/64, an instance norm of each (m, c) over its 64 values (biased variance,
// eps 1e-5), the per-channel affine in_weight[c], in_bias[c], then out = (z + y) · y laid out as (M, N).
#include <opbench/kernel.h>
#include <cmath>
#include <vector>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1], N = call->inputs[2].shape[0];
  const int64_t C = call->inputs[4].shape[0], S = N / C;  // S = 64 = 8·8 values per channel
  const float* X = static_cast<const float*>(x.data);
  const float* Y = static_cast<const float*>(call->inputs[1].data);
  const float* W = static_cast<const float*>(call->inputs[2].data);  // (N, K): stored (out, in)
  const float* bias = static_cast<const float*>(call->inputs[3].data);
  const float* in_weight = static_cast<const float*>(call->inputs[4].data);
  const float* in_bias = static_cast<const float*>(call->inputs[5].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  const double eps = 1e-5;
  std::vector<double> h(S);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t c = 0; c < C; ++c) {
      // Channel c of sample m: the 8×8 map h[m, c·64 .. c·64 + 63].
      for (int64_t s = 0; s < S; ++s) {
        const int64_t n = c * S + s;
        double acc = double(bias[n]);
        for (int64_t k = 0; k < K; ++k) acc += double(X[m * K + k]) * double(W[n * K + k]);
        h[s] = acc;
      }
      double mu = 0.0;
      for (int64_t s = 0; s < S; ++s) mu += h[s];
      mu = mu / double(S);
      double var = 0.0;
      for (int64_t s = 0; s < S; ++s) var += (h[s] - mu) * (h[s] - mu);
      var = var / double(S);  // biased
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t s = 0; s < S; ++s) {
        const int64_t n = c * S + s;
        const double z = (h[s] - mu) * inv * double(in_weight[c]) + double(in_bias[c]);
        const double yv = double(Y[m * N + n]);
        Out[m * N + n] = float((z + yv) * yv);  // residual add of y, then multiply by y
      }
    }
  }
  return 0;
}
