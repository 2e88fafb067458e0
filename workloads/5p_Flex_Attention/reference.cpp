// 5p_Flex_Attention reference: out = softmax(q·kᵀ/√D + bias[h], j > i set to -1e30)·v per batch and
// head, in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of S scores / probabilities in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[2]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  const float* Bias = static_cast<const float*>(call->inputs[3].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  double* p = static_cast<double*>(call->workspace);
  const double scale = 1.0 / std::sqrt(double(D));
  const double masked = -1e30;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t head = (b * H + h) * S * D;  // [b, h] slice of q, k, v, out
      for (int64_t i = 0; i < S; ++i) {
        const float* qi = Q + head + i * D;
        const float* bias = Bias + (h * S + i) * S;  // bias[h, i, :]
        for (int64_t j = 0; j < S; ++j) {
          const float* kj = K + head + j * D;
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += double(qi[d]) * double(kj[d]);
          p[j] = (j > i) ? masked : dot * scale + double(bias[j]);
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
          for (int64_t j = 0; j < S; ++j) acc += p[j] * double(V[head + j * D + d]);
          O[head + i * D + d] = float(acc / sum);
        }
      }
    }
  return 0;
}
