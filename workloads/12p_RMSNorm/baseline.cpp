// 12p_RMSNorm baseline: what a fusing compiler emits for a row reduction plus an elementwise
// epilogue: one OpenMP loop over rows, a vectorized sum of squares, then one vectorized scale pass.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t D = x.shape[x.rank - 1];
  const int64_t rows = ob_numel(&x) / D;
  const float* __restrict X = static_cast<const float*>(x.data);
  const float* __restrict scale = static_cast<const float*>(call->inputs[1].data);
  float* __restrict Y = static_cast<float*>(call->outputs[0].data);
  const float eps = 1e-5f;
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = X + r * D;
    float* __restrict yr = Y + r * D;
    float sum_sq = 0.0f;
#pragma omp simd reduction(+ : sum_sq)
    for (int64_t d = 0; d < D; ++d) sum_sq += xr[d] * xr[d];
    const float inv_rms = 1.0f / std::sqrt(sum_sq / float(D) + eps);
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) yr[d] = xr[d] * inv_rms * scale[d];
  }
  return 0;
}
