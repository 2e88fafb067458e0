// 40k_Gemm_GroupNorm_Min_BiasAdd baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: one SGEMM (W transposed)
// into the output buffer, which has the GEMM result's size and serves as its scratch; one OpenMP loop
// over rows that adds the linear bias, normalizes each group of 16 features, applies the affine and
// takes the row minimum; and one loop that writes the broadcast sum r[m] + bias[c].
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The M row minima.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t N = call->inputs[1].shape[0];
  constexpr int64_t group = 16;  // features per GroupNorm group
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const float* __restrict lb = static_cast<const float*>(call->inputs[2].data);
  const float* __restrict gamma = static_cast<const float*>(call->inputs[3].data);
  const float* __restrict beta = static_cast<const float*>(call->inputs[4].data);
  const float* __restrict bias = static_cast<const float*>(call->inputs[5].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* __restrict r = static_cast<float*>(call->workspace);
  float* H = Out;  // (M, N) GEMM result, overwritten by the (N, M) output below
  ob_vendor_sgemm('N', 'T', int(M), int(N), int(K), 1.0f, X, int(K), W,
              int(K), 0.0f, H, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    float row_min = INFINITY;
    for (int64_t g0 = 0; g0 < N; g0 += group) {
      float* __restrict h = H + m * N + g0;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < group; ++i) {
        h[i] += lb[g0 + i];
        sum += h[i];
      }
      const float mean = sum / group;
      float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
      for (int64_t i = 0; i < group; ++i) sq += (h[i] - mean) * (h[i] - mean);
      const float inv_std = 1.0f / std::sqrt(sq / group + 1e-5f);
#pragma omp simd reduction(min : row_min)
      for (int64_t i = 0; i < group; ++i) {
        const float y = (h[i] - mean) * inv_std * gamma[g0 + i] + beta[g0 + i];
        row_min = y < row_min ? y : row_min;  // with std::min GCC leaves this loop scalar
      }
    }
    r[m] = row_min;
  }
  // Every row minimum is known (the implicit barrier above); now overwrite the buffer with the output.
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t c = 0; c < N; ++c) {
    float* __restrict o = Out + c * M;
#pragma omp simd
    for (int64_t m = 0; m < M; ++m) o[m] = r[m] + bias[c];
  }
  return 0;
}
