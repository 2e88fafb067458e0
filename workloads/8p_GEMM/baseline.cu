// 8p_GEMM baseline (cuda): what XLA emits for a bf16 dot on a GPU: one cuBLAS GEMM, bf16 operands,
// fp32 accumulation, bf16 result.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  cublasHandle_t h = ob_blas(ob_stream(call));
  OB_CUBLAS_TRY(ob_gemm(h, false, false, M, N, K, 1.0f, a.data, K, b.data, N, 0.0f, call->outputs[0].data, CUDA_R_16BF, N));
  return 0;
}
