// 44k_Matmul_Divide_GELU baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one SGEMM into the output, then
// one OpenMP loop that adds the bias, divides by 10 and applies the GELU (tanh form) in place.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// exp as compilers emit it for fused loops: XLA and PyTorch use a vectorized polynomial, while glibc's
// expf and tanhf are scalar without -ffast-math. Cephes range reduction and polynomial, relative error
// < 1e-7 on [-87, 88]; written so that `omp simd` vectorizes it (as in 50k_Matmul_GELU_Softmax).
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
  const int64_t N = call->inputs[1].shape[1];
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* __restrict bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  ob_vendor_sgemm('N', 'N', int(M), int(N), int(K), 1.0f, X, int(K), W,
              int(N), 0.0f, Out, int(N));
  const float c = 0.7978845608f;  // √(2/π)
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float* __restrict h = Out + m * N;
#pragma omp simd
    for (int64_t n = 0; n < N; ++n) {
      const float t = (h[n] + bias[n]) / 10.0f;
      // gelu(t) = 0.5·t·(1 + tanh(y)) = t·sigmoid(2y), y = √(2/π)·(t + 0.044715·t³)
      h[n] = t / (1.0f + vexp(-2.0f * c * (t + 0.044715f * t * t * t)));
    }
  }
  return 0;
}
