// 45k_Gemm_GroupNorm_Swish_Multiply_Swish baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one SGEMM
// (W transposed) into the output, then one OpenMP loop over rows that adds the bias, normalizes each
// group of 32 features and applies the affine, swish, multiply and swish in place.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// exp as compilers emit it for fused loops: XLA and PyTorch use a vectorized polynomial, while glibc's
// expf is scalar without -ffast-math. Cephes range reduction and polynomial, relative error < 1e-7 on
// [-87, 88]; written so that `omp simd` vectorizes it (as in 50k_Matmul_GELU_Softmax).
static inline float vexp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  // n = round(x/ln2) by the 1.5·2^23 trick, x = n·ln2 + r with |r| ≤ ln2/2. Uses of x and n go through
  // std::fma: GCC's if-conversion then keeps the clamp a vector select under -ftrapping-math.
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
  const int64_t N = call->inputs[1].shape[0];
  constexpr int64_t group = 32;  // features per GroupNorm group
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* __restrict bias = static_cast<const float*>(call->inputs[2].data);
  const float* __restrict gamma = static_cast<const float*>(call->inputs[3].data);
  const float* __restrict beta = static_cast<const float*>(call->inputs[4].data);
  const float* __restrict mw = static_cast<const float*>(call->inputs[5].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  ob_vendor_sgemm('N', 'T', int(M), int(N), int(K), 1.0f, X, int(K), W,
              int(K), 0.0f, Out, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t g0 = 0; g0 < N; g0 += group) {
      float* __restrict h = Out + m * N + g0;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < group; ++i) {
        h[i] += bias[g0 + i];
        sum += h[i];
      }
      const float mean = sum / group;
      float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
      for (int64_t i = 0; i < group; ++i) sq += (h[i] - mean) * (h[i] - mean);
      const float inv_std = 1.0f / std::sqrt(sq / group + 1e-5f);
#pragma omp simd
      for (int64_t i = 0; i < group; ++i) {
        const float y = (h[i] - mean) * inv_std * gamma[g0 + i] + beta[g0 + i];
        const float s = y / (1.0f + vexp(-y)) * mw[g0 + i];  // swish, multiply
        h[i] = s / (1.0f + vexp(-s));                        // swish
      }
    }
  }
  return 0;
}
