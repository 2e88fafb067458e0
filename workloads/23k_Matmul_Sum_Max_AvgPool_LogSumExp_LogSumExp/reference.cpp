// 23k_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp reference, as JAXBench writes it, in double: the full
// GEMM y = x·Wᵀ + b, the row sum s (M, 1), then max, mean, logsumexp and logsumexp, each over axis 1 of
// s, which has length 1 (so each is an identity, computed here as written).
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1], N = call->inputs[1].shape[0];
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(call->inputs[1].data);  // (N, K): stored (out, in)
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);          // (M, 1)
  for (int64_t m = 0; m < M; ++m) {
    double s = 0.0;  // s[m] = Σ_n y[m, n]  (sum over axis 1, keepdims)
    for (int64_t n = 0; n < N; ++n) {
      double y = double(bias[n]);
      for (int64_t k = 0; k < K; ++k) y += double(X[m * K + k]) * double(W[n * K + k]);
      s += y;
    }
    // s[m] is row m of an (M, 1) array; each step below reduces over its axis 1 (length 1), keepdims.
    const double mx = s;                                      // max
    const double avg = mx / 1.0;                              // mean
    const double l1 = avg + std::log(std::exp(avg - avg));    // logsumexp: max + log Σ exp(v − max)
    const double l2 = l1 + std::log(std::exp(l1 - l1));       // logsumexp
    Out[m] = float(l2);
  }
  return 0;
}
