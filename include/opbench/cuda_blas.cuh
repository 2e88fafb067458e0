/* cuBLAS helpers for the cuda target's baselines (trusted code only: a candidate that includes this
 * links cuBLAS and is rejected). Row-major views over cuBLAS's column-major API, bf16 operands, fp32
 * accumulation (CUBLAS_COMPUTE_32F), the way XLA calls cuBLAS for a bf16 dot.
 *
 * Row-major C[M,N] = op(A)[M,K] · op(B)[K,N] is column-major C^T = op(B)^T · op(A)^T, so every
 * wrapper swaps the operands and passes (N, M, K).
 */
#ifndef OPBENCH_CUDA_BLAS_CUH
#define OPBENCH_CUDA_BLAS_CUH

#include <cublas_v2.h>

#include <opbench/cuda_util.cuh>

/* ob_run's return code for a failed cuBLAS call: this base plus the cublasStatus_t value. */
#define OB_CUBLAS_ERROR_BASE 2000

#define OB_CUBLAS_TRY(expr)                                         \
  do {                                                              \
    const cublasStatus_t ob_blas_st_ = (expr);                      \
    if (ob_blas_st_ != CUBLAS_STATUS_SUCCESS) return OB_CUBLAS_ERROR_BASE + int(ob_blas_st_); \
  } while (0)

/* One handle per process (the worker runs one kernel on one device), bound to the call's stream.
 * Created on first use, which the harness's warm-up calls absorb; never destroyed (the worker's
 * exit releases it). Returns null when cuBLAS cannot start. */
static inline cublasHandle_t ob_blas(cudaStream_t stream) {
  static cublasHandle_t handle = nullptr;
  if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return nullptr;
  cublasSetStream(handle, stream);
  return handle;
}

/* Element types as cuBLAS names them. */
static inline cudaDataType_t ob_blas_type_bf16() { return CUDA_R_16BF; }
static inline cudaDataType_t ob_blas_type_f32() { return CUDA_R_32F; }

/* Row-major C = alpha · op(A) · op(B) + beta · C. A is (M,K) (or (K,M) when trans_a), B is (K,N) (or
 * (N,K) when trans_b); lda/ldb/ldc are row strides in elements. A and B are bf16; C is c_type
 * (CUDA_R_16BF or CUDA_R_32F). */
static inline cublasStatus_t ob_gemm(cublasHandle_t h, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                     const void* A, int64_t lda, const void* B, int64_t ldb, float beta, void* C,
                                     cudaDataType_t c_type, int64_t ldc) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  return cublasGemmEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, int(N), int(M), int(K), &alpha, B,
                      CUDA_R_16BF, int(ldb), A, CUDA_R_16BF, int(lda), &beta, C, c_type, int(ldc), CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT);
}

/* The same over `batch` matrices at fixed strides (in elements) apart: C_b = op(A_b) · op(B_b). */
static inline cublasStatus_t ob_gemm_batched(cublasHandle_t h, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                             const void* A, int64_t lda, int64_t stride_a, const void* B, int64_t ldb,
                                             int64_t stride_b, float beta, void* C, cudaDataType_t c_type, int64_t ldc,
                                             int64_t stride_c, int64_t batch) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  return cublasGemmStridedBatchedEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, int(N), int(M), int(K),
                                    &alpha, B, CUDA_R_16BF, int(ldb), stride_b, A, CUDA_R_16BF, int(lda), stride_a, &beta, C, c_type,
                                    int(ldc), stride_c, int(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

#endif /* OPBENCH_CUDA_BLAS_CUH */
