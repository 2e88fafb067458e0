// 29k_Matmul_Swish_Sum_GroupNorm baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one SGEMM into the
// output, then one OpenMP loop over rows that applies swish + bias and the GroupNorm in place (a row
// is 8-16 KB and stays in L1/L2 between the passes).
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// exp as compilers emit it for fused loops: XLA and PyTorch use a vectorized polynomial, while glibc's
// expf is scalar without -ffast-math. Cephes range reduction and polynomial, relative error < 1e-7 on
// [-87, 88]; written so that `omp simd` vectorizes it (see 1p_Flash_Attention).
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
  p = std::fma(p, r * r, r) + 1.0f;                           // e^r ≈ 1 + r + r²·p(r)
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);  // · 2^n
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t N = call->inputs[1].shape[1];
  const int64_t groups = 64, S = N / groups;
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* __restrict bias = static_cast<const float*>(call->inputs[2].data);
  const float* __restrict gamma = static_cast<const float*>(call->inputs[3].data);
  const float* __restrict beta = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  ob_vendor_sgemm('N', 'N', int(M), int(N), int(K), 1.0f, X, int(K), W,
              int(N), 0.0f, Out, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float* __restrict s = Out + m * N;
#pragma omp simd
    for (int64_t n = 0; n < N; ++n) s[n] = s[n] / (1.0f + vexp(-s[n])) + bias[n];  // swish, then + b
    for (int64_t g = 0; g < groups; ++g) {
      float* __restrict sg = s + g * S;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < S; ++i) sum += sg[i];
      const float mean = sum / float(S);
      float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
      for (int64_t i = 0; i < S; ++i) sq += (sg[i] - mean) * (sg[i] - mean);
      const float inv_std = 1.0f / std::sqrt(sq / float(S) + 1e-5f);
#pragma omp simd
      for (int64_t i = 0; i < S; ++i)
        sg[i] = (sg[i] - mean) * inv_std * gamma[g * S + i] + beta[g * S + i];
    }
  }
  return 0;
}
