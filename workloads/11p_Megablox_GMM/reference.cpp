// 11p_Megablox_GMM reference: grouped matmul. Rows are split into G consecutive groups by group_sizes;
// the rows of group g are multiplied by rhs[g]. Rows past the sum of the sizes are zero. In double.
#include <opbench/kernel.h>

OB_DEFINE_ABI_VERSION()

// One output row in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[1].shape[2]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t G = call->inputs[1].shape[0], N = call->inputs[1].shape[2];
  const float* lhs = static_cast<const float*>(call->inputs[0].data);  // (M, K)
  const float* rhs = static_cast<const float*>(call->inputs[1].data);  // (G, K, N)
  const int32_t* sizes = static_cast<const int32_t*>(call->inputs[2].data);
  float* out = static_cast<float*>(call->outputs[0].data);
  double* acc = static_cast<double*>(call->workspace);
  int64_t start = 0;
  for (int64_t g = 0; g < G; ++g) {
    if (sizes[g] < 0 || start + sizes[g] > M) return 1;  // group sizes must be ≥ 0 and sum to ≤ M
    for (int64_t r = start; r < start + sizes[g]; ++r) {
      for (int64_t n = 0; n < N; ++n) acc[n] = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t n = 0; n < N; ++n) acc[n] += double(lhs[r * K + k]) * double(rhs[(g * K + k) * N + n]);
      }
      for (int64_t n = 0; n < N; ++n) out[r * N + n] = float(acc[n]);
    }
    start += sizes[g];
  }
  for (int64_t r = start; r < M; ++r) {
    for (int64_t n = 0; n < N; ++n) out[r * N + n] = 0.0f;
  }
  return 0;
}
