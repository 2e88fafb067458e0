// 24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one
// SGEMM x·Wᵀ into the workspace, then one OpenMP loop over rows: bias, scale, doubling, clamp and row max
// in one vectorized pass, the exp-sum in a second, and L · mish(L) per row.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// exp as compilers emit it for fused loops (glibc's expf keeps the loop scalar without -ffast-math).
// Cephes range reduction and polynomial, relative error < 1e-7 on [-87, 88]; written so that `omp simd`
// vectorizes it (see workloads/1p_Flash_Attention/baseline.cpp).
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

// t, (M, N).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * uint64_t(call->inputs[1].shape[0]) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t N = call->inputs[1].shape[0];
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* __restrict bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* T = static_cast<float*>(call->workspace);
  ob_vendor_sgemm('N', 'T', int(M), int(N), int(K), 1.0f, X, int(K), W, int(K),
              0.0f, T, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float* __restrict t = T + m * N;
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int64_t n = 0; n < N; ++n) {
      float v = 2.0f * (t[n] + bias[n]);
      v = v + v;
      v = v < -10.0f ? -10.0f : (v > 10.0f ? 10.0f : v);
      t[n] = v;
      mx = v > mx ? v : mx;
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t n = 0; n < N; ++n) sum += vexp(t[n] - mx);
    const float L = mx + std::log(sum);
    const float sp = (L > 0.0f ? L : 0.0f) + std::log1p(std::exp(-std::fabs(L)));
    Out[m] = L * (L * std::tanh(sp));
  }
  return 0;
}
