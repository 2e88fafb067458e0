// 49k_Matmul_AvgPool_GELU_Scale_Max baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits for the math as
// written: one full SGEMM into a workspace, then one OpenMP loop over rows that adds the bias, averages
// each block of 16 features, applies GELU and the scale and takes the row maximum. (Pooling W first
// would need 16x less GEMM work; compilers do not find that rewrite.)
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The (M, N) GEMM result.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * uint64_t(call->inputs[1].shape[1]) * sizeof(float);
}

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
  constexpr int64_t pool = 16;  // pool_kernel_size
  const int64_t J = N / pool;
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* __restrict bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* H = static_cast<float*>(call->workspace);
  ob_vendor_sgemm('N', 'N', int(M), int(N), int(K), 1.0f, X, int(K), W,
              int(N), 0.0f, H, int(N));
  const float c = 0.7978845608f;  // √(2/π)
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float* __restrict h = H + m * N;
    // Pool in place: p[j] goes to h[j], which lies at or before the block 16j..16j+15 just read.
    for (int64_t j = 0; j < J; ++j) {
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < pool; ++i) sum += h[j * pool + i] + bias[j * pool + i];
      h[j] = sum * (1.0f / pool);
    }
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < J; ++j) {
      const float p = h[j];
      // 2·gelu(p) = 2·p·sigmoid(2y), y = √(2/π)·(p + 0.044715·p³)
      const float v = 2.0f * p / (1.0f + vexp(-2.0f * c * (p + 0.044715f * p * p * p)));
      mx = v > mx ? v : mx;  // with std::max GCC leaves this loop scalar
    }
    Out[m] = mx;
  }
  return 0;
}
