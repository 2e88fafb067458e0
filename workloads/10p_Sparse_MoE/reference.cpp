// 10p_Sparse_MoE reference: Mixtral top-2 mixture of experts, computed densely as JAXBench does: per
// token the router logits, the top-2 softmax gate weights, the SwiGLU MLP of every expert, and the
// gate-weighted sum over experts (weight 0 for the six unselected ones), all in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// Per token: router logits (NE), gate and up rows (F each), one expert's output row and the sum (E each).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t NE = call->inputs[2].shape[0], E = call->inputs[2].shape[1], F = call->inputs[2].shape[2];
  return uint64_t(NE + 2 * F + 2 * E) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t NE = call->inputs[2].shape[0], E = call->inputs[2].shape[1], F = call->inputs[2].shape[2];
  const int64_t tokens = ob_numel(&call->inputs[0]) / E;  // B·S
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* Wr = static_cast<const float*>(call->inputs[1].data);  // (E, NE)
  const float* Wg = static_cast<const float*>(call->inputs[2].data);  // (NE, E, F)
  const float* Wu = static_cast<const float*>(call->inputs[3].data);  // (NE, E, F)
  const float* Wd = static_cast<const float*>(call->inputs[4].data);  // (NE, F, E)
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* logit = static_cast<double*>(call->workspace);
  double* g = logit + NE;
  double* u = g + F;
  double* y = u + F;
  double* acc = y + E;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xt = X + t * E;
    // 1. Router logits.
    for (int64_t n = 0; n < NE; ++n) {
      logit[n] = 0.0;
      for (int64_t e = 0; e < E; ++e) logit[n] += double(xt[e]) * double(Wr[e * NE + n]);
    }
    // 2. Top 2, the lower expert index first among equal logits.
    int64_t e0 = 0;
    for (int64_t n = 1; n < NE; ++n)
      if (logit[n] > logit[e0]) e0 = n;
    int64_t e1 = e0 == 0 ? 1 : 0;
    for (int64_t n = 0; n < NE; ++n)
      if (n != e0 && logit[n] > logit[e1]) e1 = n;
    // 3. Softmax over the two selected logits.
    const double r = std::exp(logit[e1] - logit[e0]);
    const double p0 = 1.0 / (1.0 + r), p1 = r / (1.0 + r);
    // 4-6. Every expert's SwiGLU MLP, summed with its gate weight.
    for (int64_t e = 0; e < E; ++e) acc[e] = 0.0;
    for (int64_t n = 0; n < NE; ++n) {
      const double w = n == e0 ? p0 : (n == e1 ? p1 : 0.0);
      const float* wg = Wg + n * E * F;
      const float* wu = Wu + n * E * F;
      const float* wd = Wd + n * F * E;
      for (int64_t f = 0; f < F; ++f) g[f] = u[f] = 0.0;
      for (int64_t e = 0; e < E; ++e) {
        for (int64_t f = 0; f < F; ++f) {
          g[f] += double(xt[e]) * double(wg[e * F + f]);
          u[f] += double(xt[e]) * double(wu[e * F + f]);
        }
      }
      for (int64_t f = 0; f < F; ++f) g[f] = g[f] / (1.0 + std::exp(-g[f])) * u[f];  // silu(g)·u
      for (int64_t e = 0; e < E; ++e) y[e] = 0.0;
      for (int64_t f = 0; f < F; ++f) {
        for (int64_t e = 0; e < E; ++e) y[e] += g[f] * double(wd[f * E + e]);
      }
      for (int64_t e = 0; e < E; ++e) acc[e] += w * y[e];
    }
    for (int64_t e = 0; e < E; ++e) Out[t * E + e] = float(acc[e]);
  }
  return 0;
}
