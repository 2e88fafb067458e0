// 15p_RetNet_Retention reference: A = (q·kᵀ) ⊙ decay (γ_h^(i-j) for j <= i, else 0), each row divided
// by max(Σ_j |A[i,j]|, 1), times v; dense over S×S, per head, in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of S retention weights in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[2]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  double* a = static_cast<double*>(call->workspace);
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t h = bh % H, head = bh * S * D;  // [b, h] slice of every tensor
    const double log_gamma = std::log(1.0 - std::pow(2.0, double(-5 - h)));
    for (int64_t i = 0; i < S; ++i) {
      const float* qi = Q + head + i * D;
      for (int64_t j = 0; j < S; ++j) {
        const float* kj = K + head + j * D;
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d) dot += double(qi[d]) * double(kj[d]);
        const double decay = (j <= i) ? std::exp(log_gamma * double(i - j)) : 0.0;
        a[j] = dot * decay;
      }
      double abs_sum = 0.0;
      for (int64_t j = 0; j < S; ++j) abs_sum += std::fabs(a[j]);
      const double r = std::fmax(abs_sum, 1.0);
      for (int64_t j = 0; j < S; ++j) a[j] = a[j] / r;
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < S; ++j) acc += a[j] * double(V[head + j * D + d]);
        O[head + i * D + d] = float(acc);
      }
    }
  }
  return 0;
}
