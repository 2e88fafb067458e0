// 32k_Gemm_Sigmoid_LogSumExp baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: an SGEMM (W1 transposed)
// into a hidden buffer, one OpenMP loop that adds b1 and applies the sigmoid in place, an SGEMM (W2
// transposed) into a logit buffer, and one OpenMP loop over rows for b2 and the logsumexp.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The (M, H) hidden activations and the (M, N) logits.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const uint64_t M = uint64_t(call->inputs[0].shape[0]);
  return M * uint64_t(call->inputs[1].shape[0] + call->inputs[3].shape[0]) * sizeof(float);
}

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
  const int64_t H = call->inputs[1].shape[0], N = call->inputs[3].shape[0];
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W1 = static_cast<const float*>(call->inputs[1].data);  // (H, K)
  const float* __restrict b1 = static_cast<const float*>(call->inputs[2].data);
  const float* W2 = static_cast<const float*>(call->inputs[3].data);  // (N, H)
  const float* __restrict b2 = static_cast<const float*>(call->inputs[4].data);
  float* __restrict Out = static_cast<float*>(call->outputs[0].data);
  float* A = static_cast<float*>(call->workspace);  // (M, H)
  float* Z = A + M * H;                             // (M, N)
  ob_vendor_sgemm('N', 'T', int(M), int(H), int(K), 1.0f, X, int(K), W1,
              int(K), 0.0f, A, int(H));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float* __restrict a = A + m * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) a[j] = 1.0f / (1.0f + vexp(-(a[j] + b1[j])));
  }
  ob_vendor_sgemm('N', 'T', int(M), int(N), int(H), 1.0f, A, int(H), W2,
              int(H), 0.0f, Z, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float* __restrict z = Z + m * N;
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int64_t n = 0; n < N; ++n) {
      z[n] += b2[n];
      mx = z[n] > mx ? z[n] : mx;  // with std::max GCC leaves this loop scalar
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t n = 0; n < N; ++n) sum += vexp(z[n] - mx);
    Out[m] = mx + std::log(sum);
  }
  return 0;
}
