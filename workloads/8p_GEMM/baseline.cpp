// 8p_GEMM baseline: one vendor SGEMM call, which is what XLA's CPU backend or any compiler emits for a
// bare matmul: oneDNN's dnnl_sgemm at x86-64-v4, OpenBLAS's cblas_sgemm at x86-64-v3
// (include/opbench/vendor_sgemm.h says why).
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(call->outputs[0].data);
  return ob_vendor_sgemm('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);  // C (M x N) = A (M x K) · B (K x N)
}
