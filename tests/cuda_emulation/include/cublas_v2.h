// Emulated cuBLAS (tests/cuda_emulation): the GEMMs of this suite, as cuBLAS defines them.
// Column-major; op(A) is m×k, op(B) k×n, C m×n; C = alpha·op(A)·op(B) + beta·C with host-pointer
// alpha and beta (fp32 for CUBLAS_COMPUTE_32F), C not read when beta == 0; fp32 accumulation of exact
// bf16 products; the leading-dimension and argument checks of the cuBLAS documentation, with its
// status codes. Strided batched: stride 0 reuses one matrix for the whole batch. Every matrix must
// lie inside one device allocation (else the emulation reports the illegal address the device
// would meet, or silently read, there).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

typedef struct cublasContext* cublasHandle_t;

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16,
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef enum {
  CUDA_R_16F = 2,
  CUDA_R_32F = 0,
  CUDA_R_64F = 1,
  CUDA_R_16BF = 14,
  CUDA_R_8I = 3,
  CUDA_R_32I = 10,
} cudaDataType_t;
typedef cudaDataType_t cudaDataType;

typedef enum {
  CUBLAS_COMPUTE_16F = 64,
  CUBLAS_COMPUTE_16F_PEDANTIC = 65,
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_PEDANTIC = 69,
  CUBLAS_COMPUTE_32F_FAST_16F = 74,
  CUBLAS_COMPUTE_32F_FAST_16BF = 75,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  CUBLAS_COMPUTE_64F = 70,
  CUBLAS_COMPUTE_64F_PEDANTIC = 71,
  CUBLAS_COMPUTE_32I = 72,
  CUBLAS_COMPUTE_32I_PEDANTIC = 73,
} cublasComputeType_t;

typedef enum {
  CUBLAS_GEMM_DEFAULT = -1,
  CUBLAS_GEMM_DFALT = -1,
  CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99,
  CUBLAS_GEMM_DFALT_TENSOR_OP = 99,
} cublasGemmAlgo_t;

typedef enum {
  CUBLAS_DEFAULT_MATH = 0,
  CUBLAS_TENSOR_OP_MATH = 1,
  CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes);
const char* cublasGetStatusName(cublasStatus_t status);
const char* cublasGetStatusString(cublasStatus_t status);

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType_t Atype, int lda, const void* B, cudaDataType_t Btype,
                            int ldb, const void* beta, void* C, cudaDataType_t Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                                          int k, const void* alpha, const void* A, cudaDataType_t Atype, int lda, long long strideA,
                                          const void* B, cudaDataType_t Btype, int ldb, long long strideB, const void* beta, void* C,
                                          cudaDataType_t Ctype, int ldc, long long strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo);

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc);
