// 4p_Sparse_Attention reference: o = softmax(q·kᵀ with dropped pairs set to -1e30)·v per batch and
// query head (q pre-scaled), query head h reading kv head ⌊h/(Hq/Hkv)⌋; in double. Pair (i, j) is kept
// iff j ≤ i and (i - j < W or j < G), with W = ⌊S/4⌋ (sliding window) and G = ⌊S/32⌋ (global keys).
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of S scores / probabilities in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[2]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], Hq = q.shape[1], S = q.shape[2], D = q.shape[3];
  const int64_t Hkv = call->inputs[1].shape[1];
  const int64_t group = Hq / Hkv;
  const int64_t W = S / 4, G = S / 32;
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  double* p = static_cast<double*>(call->workspace);
  const double masked = -1e30;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const float* Qh = Q + (b * Hq + h) * S * D;
      const float* Kh = K + (b * Hkv + h / group) * S * D;
      const float* Vh = V + (b * Hkv + h / group) * S * D;
      float* Oh = O + (b * Hq + h) * S * D;
      for (int64_t i = 0; i < S; ++i) {
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += double(Qh[i * D + d]) * double(Kh[j * D + d]);
          const bool keep = j <= i && (i - j < W || j < G);
          p[j] = keep ? dot : masked;
        }
        double m = p[0];
        for (int64_t j = 1; j < S; ++j) m = std::fmax(m, p[j]);
        double sum = 0.0;
        for (int64_t j = 0; j < S; ++j) {
          p[j] = std::exp(p[j] - m);
          sum += p[j];
        }
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < S; ++j) acc += p[j] * double(Vh[j * D + d]);
          Oh[i * D + d] = float(acc / sum);
        }
      }
    }
  return 0;
}
