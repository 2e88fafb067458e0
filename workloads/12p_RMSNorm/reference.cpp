// 12p_RMSNorm reference: y = x · rsqrt(mean(x²) + eps) · scale per row, in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t D = x.shape[x.rank - 1];
  const int64_t rows = ob_numel(&x) / D;
  const float* X = static_cast<const float*>(x.data);
  const float* scale = static_cast<const float*>(call->inputs[1].data);
  float* Y = static_cast<float*>(call->outputs[0].data);
  const double eps = 1e-5;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = X + r * D;
    double sum_sq = 0.0;
    for (int64_t d = 0; d < D; ++d) sum_sq += double(xr[d]) * double(xr[d]);
    const double inv_rms = 1.0 / std::sqrt(sum_sq / double(D) + eps);
    for (int64_t d = 0; d < D; ++d) Y[r * D + d] = float(double(xr[d]) * inv_rms * double(scale[d]));
  }
  return 0;
}
