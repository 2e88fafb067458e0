// 21k_Gemm_Divide_Sum_Scaling reference: out[m] = 1.5 · Σ_n (x·Wᵀ)[m, n] / 2, as JAXBench writes it (the
// full GEMM, then the divide, the row sum and the scaling), in double.
#include <opbench/kernel.h>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t M = x.shape[0], K = x.shape[1], N = call->inputs[1].shape[0];
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(call->inputs[1].data);  // (N, K): stored (out, in)
  float* Out = static_cast<float*>(call->outputs[0].data);          // (M, 1)
  for (int64_t m = 0; m < M; ++m) {
    double s = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      double y = 0.0;  // y[m, n] = Σ_k x[m, k] · W[n, k]
      for (int64_t k = 0; k < K; ++k) y += double(X[m * K + k]) * double(W[n * K + k]);
      s += y / 2.0;    // divide by 2.0, then sum over n (keepdims)
    }
    Out[m] = float(1.5 * s);  // scaling_factor 1.5
  }
  return 0;
}
