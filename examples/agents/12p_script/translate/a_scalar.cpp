// Scripted translation: 12p RMSNorm as plain loops, one thread. y = x / sqrt(mean(x^2) + 1e-5) * scale.
#include <opbench/kernel.h>

#include <cmath>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t D = x.shape[x.rank - 1], rows = ob_numel(&x) / D;
  const float* X = static_cast<const float*>(x.data);
  const float* scale = static_cast<const float*>(call->inputs[1].data);
  float* Y = static_cast<float*>(call->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t d = 0; d < D; ++d) ss += double(X[r * D + d]) * X[r * D + d];
    const float inv = 1.0f / std::sqrt(float(ss / double(D)) + 1e-5f);
    for (int64_t d = 0; d < D; ++d) Y[r * D + d] = X[r * D + d] * inv * scale[d];
  }
  return 0;
}
