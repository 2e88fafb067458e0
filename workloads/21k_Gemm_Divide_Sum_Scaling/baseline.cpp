// 21k_Gemm_Divide_Sum_Scaling baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) does with JAXBench's program: the
// full SGEMM y = x·Wᵀ into the workspace (XLA does not move the row sum through the GEMM), then one fused
// OpenMP loop per row for the divide, the sum and the scaling.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>

OB_DEFINE_ABI_VERSION()

// y, (M, N).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * uint64_t(call->inputs[1].shape[0]) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t N = call->inputs[1].shape[0];
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* Y = static_cast<float*>(call->workspace);
  ob_vendor_sgemm('N', 'T', int(M), int(N), int(K), 1.0f, X, int(K), W, int(K),
              0.0f, Y, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    const float* __restrict y = Y + m * N;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t n = 0; n < N; ++n) s += y[n] / 2.0f;
    Out[m] = 1.5f * s;
  }
  return 0;
}
