// 9p_SwiGLU_MLP baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits: two SGEMMs for the gate and up
// projections, one fused silu(g)·u loop, and one SGEMM for the down projection.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The gate and up activations, (B·S, F) each.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t E = call->inputs[1].shape[0], F = call->inputs[1].shape[1];
  const int64_t tokens = ob_numel(&call->inputs[0]) / E;
  return 2 * uint64_t(tokens) * uint64_t(F) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t E = call->inputs[1].shape[0], F = call->inputs[1].shape[1];
  const int64_t T = ob_numel(&call->inputs[0]) / E;  // tokens, B·S
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* Wg = static_cast<const float*>(call->inputs[1].data);
  const float* Wu = static_cast<const float*>(call->inputs[2].data);
  const float* Wd = static_cast<const float*>(call->inputs[3].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* __restrict G = static_cast<float*>(call->workspace);
  float* __restrict U = G + T * F;
  ob_vendor_sgemm('N', 'N', int(T), int(F), int(E), 1.0f, X, int(E), Wg,
              int(F), 0.0f, G, int(F));
  ob_vendor_sgemm('N', 'N', int(T), int(F), int(E), 1.0f, X, int(E), Wu,
              int(F), 0.0f, U, int(F));
  // glibc's expf keeps this loop scalar (no -ffast-math), but it is only B·S·F elements: 0.7 ms of
  // 25 ms at the cpu size on 2 threads, so no vectorized exp here.
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t t = 0; t < T; ++t) {
    float* __restrict g = G + t * F;
    const float* __restrict u = U + t * F;
#pragma omp simd
    for (int64_t f = 0; f < F; ++f) g[f] = g[f] / (1.0f + std::exp(-g[f])) * u[f];  // silu(g)·u
  }
  ob_vendor_sgemm('N', 'N', int(T), int(E), int(F), 1.0f, G, int(F), Wd,
              int(E), 0.0f, Out, int(E));
  return 0;
}
