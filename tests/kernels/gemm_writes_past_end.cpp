// Computes C correctly, then writes one float right after the last element of C (C[M*N]): the harness must catch the out-of-bounds write (canary / guard page) and score it incorrect or crashed.
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
  volatile float* past_end = C + M * N;  // volatile: the store must really happen
  *past_end = 42.0f;
  return 0;
}
