// A correct GEMM with two tunable parameters, for the tuner's tests: every point is correct, and
// the block size changes the speed.
#include <opbench/kernel.h>

// opbench:param BLOCK_K 8 32 128
// opbench:param ROWS_PER_TASK 1 4
#ifndef BLOCK_K
#define BLOCK_K 32
#endif
#ifndef ROWS_PER_TASK
#define ROWS_PER_TASK 1
#endif

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(call->outputs[0].data);
#pragma omp parallel for schedule(dynamic, ROWS_PER_TASK) num_threads(call->num_threads)
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) C[i * N + j] = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += BLOCK_K) {
      const int64_t k1 = k0 + BLOCK_K < K ? k0 + BLOCK_K : K;
      for (int64_t k = k0; k < k1; ++k) {
        const float aik = A[i * K + k];
        for (int64_t j = 0; j < N; ++j) C[i * N + j] += aik * B[k * N + j];
      }
    }
  }
  return 0;
}
