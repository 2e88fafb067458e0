// 23k_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) does with
// JAXBench's program: the full SGEMM x·Wᵀ into the workspace (XLA does not move the row sum through the
// GEMM), then one fused OpenMP loop per row: the bias and the row sum, then max, mean, logsumexp and
// logsumexp over the length-1 axis. XLA turns the max and the mean over a length-1 axis into copies but
// keeps each logsumexp's exp and log, as here.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <cmath>

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
  const float* __restrict bias = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* Y = static_cast<float*>(call->workspace);
  ob_vendor_sgemm('N', 'T', int(M), int(N), int(K), 1.0f, X, int(K), W, int(K),
              0.0f, Y, int(N));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t m = 0; m < M; ++m) {
    const float* __restrict y = Y + m * N;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t n = 0; n < N; ++n) s += y[n] + bias[n];
    const float l1 = s + std::log(std::exp(s - s));  // logsumexp over one value (max, mean: copies)
    Out[m] = l1 + std::log(std::exp(l1 - l1));       // logsumexp over one value
  }
  return 0;
}
