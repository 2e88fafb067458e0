// Row-major SGEMM for baselines, through the vendor library that is fastest at the build's
// instruction-set level: oneDNN's dnnl_sgemm at x86-64-v4 (its AVX-512 kernels), OpenBLAS's
// cblas_sgemm at x86-64-v3 (its Haswell kernels). `opbench gemm-floor` measures both libraries
// at every GEMM-dominated workload's shapes: at v4 oneDNN was the faster one at 34 of 37 on a
// Zen 5 and on a Xeon (docs/measurements). Baselines only: a candidate's sandbox holds neither
// library, so a candidate that includes this header does not load.
//
// C (M x N, ldc) = alpha * op(A) (M x K) * op(B) (K x N) + beta * C, every matrix row-major;
// trans_a / trans_b are 'N' or 'T'. Inside an OpenMP parallel region both libraries run serially
// (one GEMM per thread, as a batched GEMM does); outside, on the process's OpenMP threads.
#pragma once

#include <cstdint>

#if defined(__AVX512F__)
#include <dnnl.h>
#else
#include <cblas.h>
#endif

// Returns 0, or nonzero when the library refused the call (a shape or leading dimension it
// cannot take); a baseline returns that from ob_run.
inline int32_t ob_vendor_sgemm(char trans_a, char trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                               int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
#if defined(__AVX512F__)
  return dnnl_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == dnnl_success ? 0 : 1;
#else
  cblas_sgemm(CblasRowMajor, trans_a == 'T' ? CblasTrans : CblasNoTrans, trans_b == 'T' ? CblasTrans : CblasNoTrans, int(M), int(N),
              int(K), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
  return 0;
#endif
}
