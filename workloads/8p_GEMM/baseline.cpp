// 8p_GEMM baseline: one OpenBLAS SGEMM call, which is what XLA's CPU backend or any compiler emits
// for a bare matmul.
#include <opbench/kernel.h>
#include <cblas.h>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(N), int(K), 1.0f,
              static_cast<const float*>(a.data), int(K), static_cast<const float*>(b.data), int(N),
              0.0f, static_cast<float*>(call->outputs[0].data), int(N));
  return 0;
}
