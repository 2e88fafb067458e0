// Defines ob_abi_version but no ob_run (the compute function is misnamed): builds and links as a shared object; the harness must report the missing ob_run symbol.
#include <opbench/kernel.h>

OB_DEFINE_ABI_VERSION()

extern "C" OB_EXPORT int32_t ob_execute(const ob_call* call) {
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
