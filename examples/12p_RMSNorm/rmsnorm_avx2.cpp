// 12p_RMSNorm example: RMSNorm with AVX2/FMA intrinsics, OpenMP over rows.
//
// What it shows: per row, one pass accumulates the sum of squares in four independent 8-lane FMA
// accumulators (to hide FMA latency), then one pass writes y = x * inv_rms * scale. Any D works: the
// last D % 8 elements are handled with masked loads and stores, never touching memory past a row.
// The sum is fp32, which the tolerance allows; rows are independent, so rows are split across threads.
#include <opbench/kernel.h>

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "rmsnorm_avx2.cpp needs AVX2 and FMA (build with -mavx2 -mfma or -march=native)"
#endif

namespace {

// Lane mask selecting the first `n` (0..8) lanes, for _mm256_maskload_ps / _mm256_maskstore_ps.
inline __m256i tail_mask(int64_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(n)), lane);
}

inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t D = x.shape[x.rank - 1];
  if (D == 0) return 0;
  const int64_t rows = ob_numel(&x) / D;
  const float* X = static_cast<const float*>(x.data);
  const float* scale = static_cast<const float*>(call->inputs[1].data);
  float* Y = static_cast<float*>(call->outputs[0].data);
  const float eps = 1e-5f;
  const int64_t D32 = D / 32 * 32;  // main loop: 4 vectors per step
  const int64_t D8 = D / 8 * 8;     // then single vectors
  const __m256i mask = tail_mask(D - D8);

#pragma omp parallel for schedule(static) num_threads(call->num_threads > 0 ? call->num_threads : 1)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = X + r * D;
    float* yr = Y + r * D;

    // Pass 1: sum of squares.
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d < D32; d += 32) {
      const __m256 v0 = _mm256_loadu_ps(xr + d), v1 = _mm256_loadu_ps(xr + d + 8);
      const __m256 v2 = _mm256_loadu_ps(xr + d + 16), v3 = _mm256_loadu_ps(xr + d + 24);
      s0 = _mm256_fmadd_ps(v0, v0, s0);
      s1 = _mm256_fmadd_ps(v1, v1, s1);
      s2 = _mm256_fmadd_ps(v2, v2, s2);
      s3 = _mm256_fmadd_ps(v3, v3, s3);
    }
    for (; d < D8; d += 8) {
      const __m256 v = _mm256_loadu_ps(xr + d);
      s0 = _mm256_fmadd_ps(v, v, s0);
    }
    if (d < D) {  // masked-off lanes load as 0.0f
      const __m256 v = _mm256_maskload_ps(xr + d, mask);
      s1 = _mm256_fmadd_ps(v, v, s1);
    }
    const float sum_sq = horizontal_sum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    const __m256 inv_rms = _mm256_set1_ps(1.0f / std::sqrt(sum_sq / float(D) + eps));

    // Pass 2: y = x * inv_rms * scale.
    for (d = 0; d < D8; d += 8) {
      const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + d), inv_rms);
      _mm256_storeu_ps(yr + d, _mm256_mul_ps(v, _mm256_loadu_ps(scale + d)));
    }
    if (d < D) {
      const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(xr + d, mask), inv_rms);
      _mm256_maskstore_ps(yr + d, mask, _mm256_mul_ps(v, _mm256_maskload_ps(scale + d, mask)));
    }
  }
  return 0;
}
