// 9p_SwiGLU_MLP reference: out = (silu(x·Wg) ⊙ (x·Wu))·Wd, one token (row of x) at a time, in double.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// Per token: the gate and up rows (F each) and the output row (E), in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t E = call->inputs[1].shape[0], F = call->inputs[1].shape[1];
  return uint64_t(2 * F + E) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const int64_t E = call->inputs[1].shape[0], F = call->inputs[1].shape[1];
  const int64_t tokens = ob_numel(&x) / E;  // B·S
  const float* X = static_cast<const float*>(x.data);
  const float* Wg = static_cast<const float*>(call->inputs[1].data);
  const float* Wu = static_cast<const float*>(call->inputs[2].data);
  const float* Wd = static_cast<const float*>(call->inputs[3].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* g = static_cast<double*>(call->workspace);  // (F) x·Wg, then the hidden row h
  double* u = g + F;                                  // (F) x·Wu
  double* acc = u + F;                                // (E) h·Wd
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xt = X + t * E;
    for (int64_t f = 0; f < F; ++f) g[f] = u[f] = 0.0;
    for (int64_t e = 0; e < E; ++e) {
      for (int64_t f = 0; f < F; ++f) {
        g[f] += double(xt[e]) * double(Wg[e * F + f]);
        u[f] += double(xt[e]) * double(Wu[e * F + f]);
      }
    }
    for (int64_t f = 0; f < F; ++f) g[f] = g[f] / (1.0 + std::exp(-g[f])) * u[f];  // silu(g)·u
    for (int64_t e = 0; e < E; ++e) acc[e] = 0.0;
    for (int64_t f = 0; f < F; ++f) {
      for (int64_t e = 0; e < E; ++e) acc[e] += g[f] * double(Wd[f * E + e]);
    }
    for (int64_t e = 0; e < E; ++e) Out[t * E + e] = float(acc[e]);
  }
  return 0;
}
