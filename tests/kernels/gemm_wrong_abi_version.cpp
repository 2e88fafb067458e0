// A correct GEMM whose ob_abi_version returns 999 instead of OB_ABI_VERSION (1): the harness must reject it (ABI version mismatch) without calling ob_run.
#include <opbench/kernel.h>

extern "C" int32_t ob_abi_version(void) { return 999; }

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(call->outputs[0].data);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) C[i * N + j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < N; ++j) C[i * N + j] += A[i * K + k] * B[k * N + j];
    }
  }
  return 0;
}
