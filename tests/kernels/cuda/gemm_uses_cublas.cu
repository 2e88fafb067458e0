// 8p_GEMM (cuda): a candidate that calls cuBLAS. Only baselines may: rejected before it runs.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1], N = call->inputs[1].shape[1];
  OB_CUBLAS_TRY(ob_gemm(ob_blas(ob_stream(call)), false, false, M, N, K, 1.0f, call->inputs[0].data, K, call->inputs[1].data, N, 0.0f,
                        call->outputs[0].data, CUDA_R_16BF, N));
  return 0;
}
