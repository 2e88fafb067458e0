// 13p_Cross_Entropy reference: per-token cross-entropy of the LM head, loss[t] = logsumexp(z) - z[label]
// with z = hidden[t]·W, one token at a time, in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// One row of V logits in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[1]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t T = call->inputs[0].shape[0], Hd = call->inputs[0].shape[1];
  const int64_t V = call->inputs[1].shape[1];
  const float* hidden = static_cast<const float*>(call->inputs[0].data);  // (T, Hd)
  const float* W = static_cast<const float*>(call->inputs[1].data);       // (Hd, V)
  const int32_t* labels = static_cast<const int32_t*>(call->inputs[2].data);
  float* loss = static_cast<float*>(call->outputs[0].data);
  double* z = static_cast<double*>(call->workspace);
  for (int64_t t = 0; t < T; ++t) {
    if (labels[t] < 0 || labels[t] >= V) return 1;
    for (int64_t v = 0; v < V; ++v) z[v] = 0.0;
    for (int64_t h = 0; h < Hd; ++h) {
      for (int64_t v = 0; v < V; ++v) z[v] += double(hidden[t * Hd + h]) * double(W[h * V + v]);
    }
    double m = z[0];
    for (int64_t v = 1; v < V; ++v) m = std::fmax(m, z[v]);
    double sum = 0.0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(z[v] - m);
    const double log_prob = z[labels[t]] - m - std::log(sum);  // log_softmax(z)[label]
    loss[t] = float(-log_prob);
  }
  return 0;
}
