// Correct GEMM with zmm registers (AVX-512F intrinsics): correct at x86-64-v4, rejected by the
// instruction check at x86-64-v3.
#include <immintrin.h>
#include <opbench/kernel.h>

OB_DEFINE_ABI_VERSION()

// The attribute lets the file build at v3 too, where the instruction check must refuse it.
__attribute__((target("avx512f"))) static void row_times_b(const float* a_row, const float* B, float* c_row, int64_t K, int64_t N) {
  int64_t j = 0;
  for (; j + 16 <= N; j += 16) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; ++k) acc = _mm512_fmadd_ps(_mm512_set1_ps(a_row[k]), _mm512_loadu_ps(B + k * N + j), acc);
    _mm512_storeu_ps(c_row + j, acc);
  }
  for (; j < N; ++j) {
    float s = 0;
    for (int64_t k = 0; k < K; ++k) s += a_row[k] * B[k * N + j];
    c_row[j] = s;
  }
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(call->outputs[0].data);
#pragma omp parallel for schedule(static) num_threads(call->num_threads > 0 ? call->num_threads : 1)
  for (int64_t i = 0; i < M; ++i) row_times_b(A + i * K, B, C + i * N, K, N);
  return 0;
}
