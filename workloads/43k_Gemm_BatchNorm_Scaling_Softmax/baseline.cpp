// 43k_Gemm_BatchNorm_Scaling_Softmax baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one SGEMM into the
// output, the bias, eval-mode BatchNorm and scale folded into one per-feature multiply-add (computed
// once per call), and one OpenMP loop over rows that applies it and the softmax in place.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The folded per-feature factor and shift, N floats each.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return 2 * uint64_t(call->inputs[1].shape[1]) * sizeof(float);
}

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
  const int64_t N = call->inputs[1].shape[1];
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* bias = static_cast<const float*>(call->inputs[2].data);
  const float* gamma = static_cast<const float*>(call->inputs[3].data);
  const float* beta = static_cast<const float*>(call->inputs[4].data);
  const float* mean = static_cast<const float*>(call->inputs[5].data);
  const float* var = static_cast<const float*>(call->inputs[6].data);
  const float scale = static_cast<const float*>(call->inputs[7].data)[0];
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* __restrict A = static_cast<float*>(call->workspace);
  float* __restrict C = A + N;
  // z = scale·(γ·(h + b - μ)/√(σ² + eps) + β) = A·h + C
  for (int64_t n = 0; n < N; ++n) {
    const float g = scale * gamma[n] / std::sqrt(var[n] + 1e-5f);
    A[n] = g;
    C[n] = g * (bias[n] - mean[n]) + scale * beta[n];
  }
  ob_vendor_sgemm('N', 'N', int(M), int(N), int(K), 1.0f, X, int(K), W,
              int(N), 0.0f, Out, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float* __restrict h = Out + m * N;
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int64_t n = 0; n < N; ++n) {
      h[n] = A[n] * h[n] + C[n];
      mx = h[n] > mx ? h[n] : mx;  // with std::max GCC leaves this loop scalar
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t n = 0; n < N; ++n) {
      h[n] = vexp(h[n] - mx);
      sum += h[n];
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int64_t n = 0; n < N; ++n) h[n] *= inv;
  }
  return 0;
}
