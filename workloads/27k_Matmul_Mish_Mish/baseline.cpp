// 27k_Matmul_Mish_Mish baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one SGEMM into the output, then
// one fused OpenMP loop for the bias and the two Mish activations.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// exp as compilers emit it for fused loops (glibc's expf, log1pf and tanhf keep the loop scalar without
// -ffast-math). Cephes range reduction and polynomial, relative error < 1e-7 on [-87, 88]; written so
// that `omp simd` vectorizes it (see workloads/1p_Flash_Attention/baseline.cpp).
static inline float vexp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = std::fma(x, 1.44269504f, 12582912.0f) - 12582912.0f;
  const float r = std::fma(n, 2.12194440e-4f, std::fma(n, -0.693359375f, x));
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r) + 1.0f;
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}

// mish(t) = t·tanh(log(1 + e^t)) = t·q/(q + 2) with q = e^t·(e^t + 2), since tanh(log u) = (u² − 1)/(u² + 1)
// and u = 1 + e^t: one vectorized exp instead of exp, log1p and tanh. For t ≥ 20, q/(q + 2) = 1 in fp32,
// so t is capped there before the exp (no overflow of q).
static inline float vmish(float t) {
  const float e = vexp(t < 20.0f ? t : 20.0f);
  const float q = e * (e + 2.0f);
  return t * (q / (q + 2.0f));
}

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
    for (int64_t n = 0; n < N; ++n) h[n] = vmish(vmish(h[n] + bias[n]));
  }
  return 0;
}
