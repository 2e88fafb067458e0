// 2p_GQA_Attention reference: out = softmax(q·kᵀ/√D, j > i set to -1e9)·v per batch and query head,
// query head h reading kv head ⌊h/(Hq/Hkv)⌋; layout [B, S, H, D]; in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of S scores / probabilities in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[1]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], S = q.shape[1], Hq = q.shape[2], D = q.shape[3];
  const int64_t Hkv = call->inputs[1].shape[2];
  const int64_t G = Hq / Hkv;  // query heads per kv head
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  double* p = static_cast<double*>(call->workspace);
  const double scale = 1.0 / std::sqrt(double(D));
  const double masked = -1e9;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = h / G;
      for (int64_t i = 0; i < S; ++i) {
        const float* qi = Q + ((b * S + i) * Hq + h) * D;
        for (int64_t j = 0; j < S; ++j) {
          const float* kj = K + ((b * S + j) * Hkv + g) * D;
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += double(qi[d]) * double(kj[d]);
          p[j] = (j > i) ? masked : dot * scale;
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
          for (int64_t j = 0; j < S; ++j) acc += p[j] * double(V[((b * S + j) * Hkv + g) * D + d]);
          O[((b * S + i) * Hq + h) * D + d] = float(acc / sum);
        }
      }
    }
  return 0;
}
