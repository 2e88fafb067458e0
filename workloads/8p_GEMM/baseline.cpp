// 8p_GEMM baseline: one vendor SGEMM call, which is what XLA's CPU backend or any compiler emits for a
// bare matmul. At x86-64-v4 the call is oneDNN's dnnl_sgemm (its AVX-512 kernels; measured faster
// than OpenBLAS 0.3.21's SkylakeX sgemm at this shape by `opbench gemm-floor`), at x86-64-v3
// OpenBLAS's cblas_sgemm (Haswell kernels), as before.
#include <opbench/kernel.h>
#if defined(__AVX512F__)
#include <dnnl.h>
#else
#include <cblas.h>
#endif

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(call->outputs[0].data);
#if defined(__AVX512F__)
  // Row-major by definition: C (M x N) = A (M x K) · B (K x N).
  return dnnl_sgemm('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C, N) == dnnl_success ? 0 : 1;
#else
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(N), int(K), 1.0f, A, int(K), B, int(N), 0.0f, C, int(N));
  return 0;
#endif
}
