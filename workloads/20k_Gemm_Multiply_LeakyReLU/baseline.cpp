// 20k_Gemm_Multiply_LeakyReLU baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one SGEMM into the output,
// then one fused OpenMP loop for the bias, the multiply and the leaky ReLU.
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
      const float t = 2.0f * (h[n] + bias[n]);
      // leaky(t) = t for t ≥ 0, else 0.1·t, = max(t, 0.1·t) since the slope is < 1 (same bits). Written
      // `t >= 0 ? t : 0.1f * t`, GCC 12 keeps the loop scalar under -ftrapping-math.
      const float s = 0.1f * t;
      h[n] = t > s ? t : s;
    }
  }
  return 0;
}
