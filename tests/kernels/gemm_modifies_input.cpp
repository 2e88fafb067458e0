// Computes C correctly, then overwrites the first row of the input A with zeros: the harness must score it incorrect (input modified).
#include <opbench/kernel.h>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(call->outputs[0].data);
#pragma omp parallel for schedule(static) num_threads(call->num_threads > 0 ? call->num_threads : 1)
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) C[i * N + j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float aik = A[i * K + k];
      for (int64_t j = 0; j < N; ++j) C[i * N + j] += aik * B[k * N + j];
    }
  }
  float* A_mut = static_cast<float*>(a.data);  // a.data is void*: nothing stops the write but the rules
  for (int64_t k = 0; k < (M > 0 ? K : 0); ++k) A_mut[k] = 0.0f;
  return 0;
}
