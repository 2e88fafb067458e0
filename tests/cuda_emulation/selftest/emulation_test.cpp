// The emulation's own tests: what it models (shuffles, votes, barriers, WMMA, cuBLAS's column-major
// GEMMs) gives CUDA's results, and what it checks (deadlocks, barrier divergence, the device's launch
// limits, shared-memory garbage and bounds, memory directions, host access to device memory) is
// caught with CUDA's error codes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <ob_emu/host.h>

#include "kernels.h"

namespace {

class CudaEmulation : public ::testing::Test {
 protected:
  void SetUp() override {
    ob_emu::reset_device();
    ob_emu::set_options({});
    ob_emu::clear_call_stream();
    cudaGetLastError();
  }
  void TearDown() override {
    for (void* p : buffers_) ob_emu::device_free(p);
    ob_emu::reset_device();
    cudaGetLastError();
  }
  template <class T>
  T* device(size_t n, const char* label = "test buffer") {
    void* p = ob_emu::device_alloc(n * sizeof(T), label);
    ob_emu::fill_device(p, 0, n * sizeof(T));
    buffers_.push_back(p);
    return static_cast<T*>(p);
  }
  template <class T>
  std::vector<T> read(const T* p, size_t n) {
    std::vector<T> v(n);
    ob_emu::copy_from_device(v.data(), p, n * sizeof(T));
    return v;
  }
  std::vector<void*> buffers_;
};

TEST_F(CudaEmulation, ShufflesVotesAndBarrierReductionsGiveCudasResults) {
  int* out = device<int>(64 * kShuffleResults);
  ASSERT_EQ(run_shuffles(out), cudaSuccess);
  const std::vector<int> r = read(out, 64 * kShuffleResults);
  unsigned ballot = 0;
  for (unsigned j = 0; j < 32; ++j) ballot |= (j % 3 == 0 ? 1u : 0u) << j;
  for (int t = 0; t < 64; ++t) {
    const int lane = t & 31, base = t & ~31;
    const int* o = &r[size_t(t) * kShuffleResults];
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(o[0], t ^ 1);
    EXPECT_EQ(o[1], t ^ 16);
    EXPECT_EQ(o[2], lane + 3 < 32 ? t + 3 : t);
    EXPECT_EQ(o[3], (lane & 7) + 3 < 8 ? t + 3 : t);
    EXPECT_EQ(o[4], lane >= 5 ? t - 5 : t);
    EXPECT_EQ(o[5], (lane & 15) >= 2 ? t - 2 : t);
    EXPECT_EQ(o[6], base + 7);
    EXPECT_EQ(o[7], base + (lane & 16) + 3);
    EXPECT_EQ(unsigned(o[8]), ballot);
    EXPECT_EQ(o[9], t >= 32 ? 1 : 0);
    EXPECT_EQ(o[10], 0);
    EXPECT_EQ(o[11], t ^ 4);
    EXPECT_EQ(o[12], 4 * (t ^ 2) + 1);
    EXPECT_EQ(o[13], 13);
    EXPECT_EQ(o[14], 1);
    EXPECT_EQ(o[15], 1);
  }
}

TEST_F(CudaEmulation, DeadlockIsAStickyLaunchFailure) {
  EXPECT_EQ(run_deadlock(), cudaErrorLaunchFailure);
  EXPECT_NE(ob_emu::fault_message().find("deadlock: thread (0,0,0) waits at __syncwarp"), std::string::npos) << ob_emu::fault_message();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);  // sticky, as a faulted context is
  EXPECT_EQ(run_empty(1, 1), cudaErrorLaunchFailure);
}

TEST_F(CudaEmulation, BarrierDivergenceIsCaught) {
  EXPECT_EQ(run_exit_before_barrier(), cudaErrorLaunchFailure);
  EXPECT_NE(ob_emu::fault_message().find("barrier divergence: 1 of the block's 64 threads (the first: thread (5,0,0)) exited"), std::string::npos)
      << ob_emu::fault_message();
  ob_emu::reset_device();
  EXPECT_EQ(run_two_barriers(), cudaErrorLaunchFailure);
  EXPECT_NE(ob_emu::fault_message().find("barrier divergence"), std::string::npos) << ob_emu::fault_message();
  EXPECT_NE(ob_emu::fault_message().find("kernels.cu"), std::string::npos) << ob_emu::fault_message();
}

TEST_F(CudaEmulation, WarpOperationsNeedEveryLaneOfTheirMask) {
  int* out = device<int>(64);
  EXPECT_EQ(run_shuffle_with_exited_lane(out), cudaErrorLaunchFailure);
  EXPECT_NE(ob_emu::fault_message().find("which has exited"), std::string::npos) << ob_emu::fault_message();
  ob_emu::reset_device();
  EXPECT_EQ(run_partial_warp_shuffle(out), cudaErrorLaunchFailure);
  EXPECT_NE(ob_emu::fault_message().find("does not exist (48 threads per block)"), std::string::npos) << ob_emu::fault_message();
}

TEST_F(CudaEmulation, LaunchConfigurationLimitsAreTheDevices) {
  EXPECT_EQ(run_empty(1, 1024), cudaSuccess);
  EXPECT_EQ(run_empty(1, 1025), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // launch errors are not sticky
  EXPECT_EQ(run_empty(1, dim3(32, 32, 2)), cudaErrorInvalidConfiguration);
  EXPECT_EQ(run_empty(1, dim3(1, 1, 65)), cudaErrorInvalidConfiguration);
  EXPECT_EQ(run_empty(dim3(1, 65535, 1), 1), cudaSuccess);
  EXPECT_EQ(run_empty(dim3(1, 65536, 1), 1), cudaErrorInvalidConfiguration);
  EXPECT_EQ(run_empty(dim3(1, 1, 65536), 1), cudaErrorInvalidConfiguration);
  EXPECT_EQ(run_empty(dim3(0, 1, 1), 1), cudaErrorInvalidConfiguration);
}

TEST_F(CudaEmulation, SharedMemoryLimitsAreTheDevices) {
  EXPECT_EQ(run_dynamic_smem(48 * 1024), cudaSuccess);
  EXPECT_EQ(run_dynamic_smem(48 * 1024 + 4), cudaErrorInvalidValue);  // above 48 KiB only after the opt-in
  EXPECT_EQ(allow_dynamic_smem(227 * 1024 + 1), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);  // a failed call is also the last error, until read
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(allow_dynamic_smem(100 * 1024), cudaSuccess);
  EXPECT_EQ(run_dynamic_smem(100 * 1024), cudaSuccess);
  EXPECT_EQ(run_dynamic_smem(100 * 1024 + 4), cudaErrorInvalidValue);
  ASSERT_EQ(allow_dynamic_smem(227 * 1024), cudaSuccess);
  EXPECT_EQ(run_dynamic_smem(227 * 1024), cudaSuccess);
  // Static shared memory counts too: 40 KiB static + 9 KiB dynamic exceed 48 KiB without the opt-in.
  EXPECT_EQ(run_static_smem(0), cudaSuccess);
  EXPECT_EQ(run_static_smem(8 * 1024), cudaSuccess);  // exactly 48 KiB
  EXPECT_EQ(run_static_smem(9 * 1024), cudaErrorInvalidValue);
  ASSERT_EQ(allow_static_plus_dynamic(200 * 1024), cudaSuccess);
  EXPECT_EQ(run_static_smem(9 * 1024), cudaSuccess);
  EXPECT_EQ(run_static_smem(190 * 1024), cudaErrorInvalidValue);  // 40 + 190 KiB > 227 KiB
}

TEST_F(CudaEmulation, LaunchBoundsAreEnforced) {
  int* out = device<int>(256);
  EXPECT_EQ(run_bounded(128, out), cudaSuccess);
  EXPECT_EQ(run_bounded(256, out), cudaErrorLaunchOutOfResources);
  EXPECT_EQ(ob_emu::sticky_error(), cudaSuccess);
}

TEST_F(CudaEmulation, SharedMemoryStartsAsGarbageInEveryBlock) {
  unsigned* out = device<unsigned>(2);
  ASSERT_EQ(run_garbage(out), cudaSuccess);
  EXPECT_EQ(read(out, 2), (std::vector<unsigned>{0xFFFFFFFFu, 0xFFFFFFFFu}));  // the last of 3 blocks saw no earlier block's 7 and 9
  ob_emu::Options o;
  o.shared_garbage = 0x7F;
  ob_emu::set_options(o);
  ASSERT_EQ(run_garbage(out), cudaSuccess);
  EXPECT_EQ(read(out, 2), (std::vector<unsigned>{0x7F7F7F7Fu, 0x7F7F7F7Fu}));
}

TEST_F(CudaEmulation, AccessPastTheDynamicSharedMemoryFaults) {
  EXPECT_EQ(run_smem_overrun(1024), cudaErrorIllegalAddress);
  EXPECT_NE(ob_emu::fault_message().find("past the end of the block's 4096 bytes of dynamic shared memory"), std::string::npos)
      << ob_emu::fault_message();
}

TEST_F(CudaEmulation, WmmaComputesTheTileAndChecksItsArguments) {
  std::vector<__nv_bfloat16> a(16 * 16 + 64), b(16 * 16);
  std::vector<float> af(a.size()), bf(b.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = __float2bfloat16_rn(float(int(i % 7) - 3) * 0.5f), af[i] = __bfloat162float(a[i]);
  for (size_t i = 0; i < b.size(); ++i) b[i] = __float2bfloat16_rn(float(int(i % 5) - 2) * 0.25f), bf[i] = __bfloat162float(b[i]);
  auto* da = device<__nv_bfloat16>(a.size());
  auto* db = device<__nv_bfloat16>(b.size());
  float* dc = device<float>(256);
  ob_emu::copy_to_device(da, a.data(), a.size() * 2);
  ob_emu::copy_to_device(db, b.data(), b.size() * 2);
  ASSERT_EQ(run_wmma(da, db, dc, 0, 0), cudaSuccess);
  const std::vector<float> c = read(dc, 256);
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) {
      float want = 0.5f;
      for (int k = 0; k < 16; ++k) want += af[size_t(r * 16 + k)] * bf[size_t(col * 16 + k)];  // B col-major
      EXPECT_EQ(c[size_t(r * 16 + col)], want) << r << "," << col;
    }
  EXPECT_EQ(run_wmma(da, db, dc, 8, 0), cudaErrorMisalignedAddress);  // 16 bytes off: not 256-bit aligned
  ob_emu::reset_device();
  EXPECT_EQ(run_wmma(da, db, dc, 0, 16), cudaErrorLaunchFailure);  // lane 5's pointer differs
  EXPECT_NE(ob_emu::fault_message().find("pass different arguments"), std::string::npos) << ob_emu::fault_message();
}

TEST_F(CudaEmulation, SchedulesAreShuffledAndReproducible) {
  const int blocks = 8, threads = 64, n = blocks * threads;
  int* order = device<int>(size_t(n));
  int* counter = device<int>(1);
  auto run = [&](uint64_t seed) {
    ob_emu::Options o;
    o.schedule_seed = seed;
    ob_emu::set_options(o);
    ob_emu::fill_device(counter, 0, sizeof(int));
    EXPECT_EQ(run_order(order, counter, blocks, threads), cudaSuccess);
    return read(order, size_t(n));
  };
  const std::vector<int> a = run(1), b = run(1), c = run(2);
  std::vector<int> identity(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) identity[size_t(i)] = i;
  EXPECT_NE(a, identity);
  EXPECT_NE(a, c);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity);  // every thread ran once
}

TEST_F(CudaEmulation, LaunchArgumentsAreEvaluatedOnceAndConverted) {
  int* out = device<int>(2);
  int evaluations = 0;
  ASSERT_EQ(run_args(out, &evaluations), cudaSuccess);
  EXPECT_EQ(evaluations, 1);
  EXPECT_EQ(read(out, 2), (std::vector<int>{1, 5}));
}

// C = alpha·op(A)·op(B) + beta·C in cuBLAS's column-major terms, computed here in double.
void reference_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const std::vector<float>& A, int lda, const std::vector<float>& B,
                    int ldb, float beta, std::vector<float>& C, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double acc = 0;
      for (int l = 0; l < k; ++l) acc += double(ta ? A[size_t(l + i * lda)] : A[size_t(i + l * lda)]) * (tb ? B[size_t(j + l * ldb)] : B[size_t(l + j * ldb)]);
      C[size_t(i + j * ldc)] = float(alpha * acc + (beta != 0 ? beta * C[size_t(i + j * ldc)] : 0.0));
    }
}

TEST_F(CudaEmulation, CublasGemmIsColumnMajorWithTransposesAndChecks) {
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  const int m = 5, n = 3, k = 4, ld = 7;  // padded leading dimensions
  std::vector<__nv_bfloat16> hb(size_t(ld * ld));
  std::vector<float> hf(hb.size());
  for (size_t i = 0; i < hb.size(); ++i) hb[i] = __float2bfloat16_rn(float(int(i * 37 % 11) - 5) / 4.0f), hf[i] = __bfloat162float(hb[i]);
  auto* A = device<__nv_bfloat16>(hb.size(), "A");
  auto* B = device<__nv_bfloat16>(hb.size(), "B");
  ob_emu::copy_to_device(A, hb.data(), hb.size() * 2);
  ob_emu::copy_to_device(B, hb.data(), hb.size() * 2);
  float* C = device<float>(size_t(ld * n), "C");
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      std::vector<float> c0(size_t(ld * n), 1.5f), want = c0;
      ob_emu::copy_to_device(C, c0.data(), c0.size() * 4);
      const float alpha = 2.0f, beta = 0.5f;
      ASSERT_EQ(cublasGemmEx(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, A, CUDA_R_16BF, ld, B,
                             CUDA_R_16BF, ld, &beta, C, CUDA_R_32F, ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_SUCCESS);
      reference_gemm(ta, tb, m, n, k, alpha, hf, ld, hf, ld, beta, want, ld);
      const std::vector<float> got = read(C, want.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "transa " << ta << " transb " << tb << " at " << i;
    }
  // beta = 0: C is not read (NaN there does not propagate); bf16 output, rounded.
  std::vector<uint16_t> nan(size_t(ld * n), 0x7FC0);
  auto* Cb = device<__nv_bfloat16>(nan.size(), "Cb");
  ob_emu::copy_to_device(Cb, nan.data(), nan.size() * 2);
  const float one = 1.0f, zero = 0.0f;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, CUDA_R_16BF, ld, B, CUDA_R_16BF, ld, &zero, Cb, CUDA_R_16BF, ld,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  std::vector<float> want(size_t(ld * n), 0.0f);
  reference_gemm(false, false, m, n, k, 1.0f, hf, ld, hf, ld, 0.0f, want, ld);
  const std::vector<__nv_bfloat16> gb = read(Cb, want.size());
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) EXPECT_EQ(__bfloat162float(gb[size_t(i + j * ld)]), __bfloat162float(__float2bfloat16_rn(want[size_t(i + j * ld)])));
  // Strided batched with strideB 0: every batch multiplies by the same B.
  float* Cs = device<float>(size_t(2 * ld * n), "Cs");
  ASSERT_EQ(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, CUDA_R_16BF, ld, 2, B, CUDA_R_16BF, ld, 0, &zero, Cs,
                                       CUDA_R_32F, ld, ld * n, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  const std::vector<float> gs = read(Cs, size_t(2 * ld * n));
  std::vector<float> a1(hf.begin() + 2, hf.end());
  a1.resize(hf.size(), 0.0f);
  std::vector<float> w0(size_t(ld * n), 0.0f), w1 = w0;
  reference_gemm(false, false, m, n, k, 1.0f, hf, ld, hf, ld, 0.0f, w0, ld);
  reference_gemm(false, false, m, n, k, 1.0f, a1, ld, hf, ld, 0.0f, w1, ld);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      EXPECT_NEAR(gs[size_t(i + j * ld)], w0[size_t(i + j * ld)], 1e-5);
      EXPECT_NEAR(gs[size_t(ld * n + i + j * ld)], w1[size_t(i + j * ld)], 1e-5);
    }
  // cuBLAS's argument checks and status codes.
  auto gemm = [&](cublasOperation_t ta, int lda, int ldb, int ldc, cudaDataType_t at, void* c = nullptr, int mm = 5) {
    return cublasGemmEx(h, ta, CUBLAS_OP_N, mm, n, k, &one, A, at, lda, B, CUDA_R_16BF, ldb, &zero, c ? c : C, CUDA_R_32F, ldc,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  EXPECT_EQ(gemm(CUBLAS_OP_N, m - 1, ld, ld, CUDA_R_16BF), CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  EXPECT_EQ(gemm(CUBLAS_OP_T, k - 1, ld, ld, CUDA_R_16BF), CUBLAS_STATUS_INVALID_VALUE);  // lda < k when transposed
  EXPECT_EQ(gemm(CUBLAS_OP_T, k, ld, ld, CUDA_R_16BF), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(CUBLAS_OP_N, ld, k - 1, ld, CUDA_R_16BF), CUBLAS_STATUS_INVALID_VALUE);  // ldb < k
  EXPECT_EQ(gemm(CUBLAS_OP_N, ld, ld, m - 1, CUDA_R_16BF), CUBLAS_STATUS_INVALID_VALUE);  // ldc < m
  EXPECT_EQ(gemm(CUBLAS_OP_N, ld, ld, ld, CUDA_R_8I), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(CUBLAS_OP_N, ld, ld, ld, CUDA_R_16BF, nullptr, -1), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasGemmEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, CUDA_R_16BF, ld, B, CUDA_R_16BF, ld, &zero, C, CUDA_R_32F, ld,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_INITIALIZED);
  // C reaching past its allocation: the illegal address the device would meet.
  EXPECT_EQ(gemm(CUBLAS_OP_N, ld, ld, 2 * ld, CUDA_R_16BF), CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_EQ(ob_emu::sticky_error(), cudaErrorIllegalAddress);
  EXPECT_NE(ob_emu::fault_message().find("matrix C"), std::string::npos) << ob_emu::fault_message();
  ob_emu::reset_device();
  cublasDestroy(h);
}

TEST_F(CudaEmulation, CopiesAndSetsCheckDirectionAndBounds) {
  int* d = device<int>(16, "d");
  std::vector<int> h(16, 7), back(16, 0);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 64, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(back.data(), d, 64, cudaMemcpyDeviceToHost, nullptr), cudaSuccess);
  EXPECT_EQ(back, h);
  EXPECT_EQ(cudaMemcpyAsync(back.data(), d, 68, cudaMemcpyDeviceToHost, nullptr), cudaErrorInvalidValue);  // past the end of d
  EXPECT_EQ(cudaMemcpy(h.data(), back.data(), 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);         // the source is host memory
  EXPECT_EQ(cudaMemcpy(d, d + 8, 32, cudaMemcpyHostToDevice), cudaErrorInvalidValue);                      // the source is device memory
  EXPECT_EQ(cudaMemsetAsync(d + 4, 0, 48, nullptr), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(d + 4, 0, 52, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(back.data(), 0, 4), cudaErrorInvalidValue);
  EXPECT_EQ(ob_emu::sticky_error(), cudaSuccess);
}

TEST_F(CudaEmulation, WorkOnAnotherStreamIsCounted) {
  cudaStream_t mine, other;
  cudaStreamCreate(&mine);
  cudaStreamCreate(&other);
  ob_emu::set_call_stream(mine);
  ob_emu::reset_stats();
  int* d = device<int>(4);
  EXPECT_EQ(cudaMemsetAsync(d, 0, 16, mine), cudaSuccess);
  EXPECT_EQ(ob_emu::stats().stream_violations, 0u);
  EXPECT_EQ(cudaMemsetAsync(d, 0, 16, other), cudaSuccess);
  EXPECT_EQ(run_empty(1, 1), cudaSuccess);  // the legacy default stream
  EXPECT_EQ(ob_emu::stats().stream_violations, 2u);
  ob_emu::clear_call_stream();
  cudaStreamDestroy(mine);
  cudaStreamDestroy(other);
}

TEST_F(CudaEmulation, HostCodeMayNotTouchDeviceMemory) {
  int* d = device<int>(4, "input 3 (kv_lens)");
  EXPECT_EXIT({ volatile int x = d[1]; (void)x; }, ::testing::ExitedWithCode(3), "host code touched device memory \\(input 3 \\(kv_lens\\) \\+ 4 bytes\\)");
}

}  // namespace
