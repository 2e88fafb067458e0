// 41k_Gemm_Add_ReLU baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one SGEMM into the output, then one
// OpenMP loop that adds the bias and applies the ReLU in place.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t N = call->inputs[1].shape[1];
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* __restrict bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  ob_vendor_sgemm('N', 'N', int(M), int(N), int(K), 1.0f, X, int(K), W,
              int(N), 0.0f, Out, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float* __restrict h = Out + m * N;
#pragma omp simd
    for (int64_t n = 0; n < N; ++n) {
      const float t = h[n] + bias[n];
      h[n] = t > 0.0f ? t : 0.0f;
    }
  }
  return 0;
}
