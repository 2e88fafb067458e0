// 16p_Mamba2_SSD reference: G = (q·kᵀ) ⊙ L with L[i,j] = exp(c_i - c_j) (j <= i, else exp(-1e30) = 0),
// c = cumsum(ln(sigmoid(A_log) + 1e-8)), each row divided by max(|Σ_j G[i,j]|, 1), times v; dense over
// S×S, per head, in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The running sums c (S) and one row of S weights, in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return 2 * uint64_t(call->inputs[0].shape[2]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  const float* A_log = static_cast<const float*>(call->inputs[3].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  double* c = static_cast<double*>(call->workspace);  // (S)
  double* g = c + S;                                  // (S)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t head = bh * S * D;  // [b, h] slice of q, k, v, out
    double run = 0.0;
    for (int64_t t = 0; t < S; ++t) {
      const double a = 1.0 / (1.0 + std::exp(-double(A_log[bh * S + t])));
      run = run + std::log(a + 1e-8);
      c[t] = run;
    }
    for (int64_t i = 0; i < S; ++i) {
      const float* qi = Q + head + i * D;
      for (int64_t j = 0; j < S; ++j) {
        const float* kj = K + head + j * D;
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d) dot += double(qi[d]) * double(kj[d]);
        const double exponent = (j <= i) ? c[i] - c[j] : -1e30;
        g[j] = dot * std::exp(exponent);
      }
      double sigma = 0.0;
      for (int64_t j = 0; j < S; ++j) sigma += g[j];
      if (std::fabs(sigma) < 1e-6) sigma = 1.0;
      const double denom = std::fmax(std::fabs(sigma), 1.0);
      for (int64_t j = 0; j < S; ++j) g[j] = g[j] / denom;
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < S; ++j) acc += g[j] * double(V[head + j * D + d]);
        O[head + i * D + d] = float(acc);
      }
    }
  }
  return 0;
}
