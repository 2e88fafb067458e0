// 32k_Gemm_Sigmoid_LogSumExp baseline (cuda): out[m] = logsumexp_n(sigmoid(x·W1ᵀ + b1)·W2ᵀ + b2), W1 and W2
// stored (out, in).
// Estimate (full, 16384×2048×4096 then 16384×4096×1024; 650 TFLOP/s, 3.5 TB/s): 0.412 TFLOP 0.63 ms + 0.76 GB 0.22 ms ≈ 0.85 ms; XLA 0.833 ms (1.02x).
// Composition, as XLA on a GPU: cuBLAS GEMM 1 (bf16 operands, fp32 accumulation) writes a = x·W1ᵀ in bf16
// to the workspace; one elementwise kernel turns it in place into s = sigmoid(a + b1), bf16 (the operand of
// the next GEMM, as XLA keeps it; the step is purely elementwise); cuBLAS GEMM 2 writes z = s·W2ᵀ in fp32
// to the workspace, since it feeds the row logsumexp; one row kernel (a block per row) adds b2 and takes the
// logsumexp.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

static constexpr int kThreads = 256;  // a multiple of 32 (block reductions)

// Running logsumexp of one thread's values: mx is their maximum, s = Σ exp(v − mx) (mx = −inf, s = 0
// before the first value).
static __device__ __forceinline__ void lse_push(float v, float& mx, float& s) {
  if (v > mx) {
    s = s * expf(mx - v) + 1.0f;
    mx = v;
  } else {
    s += expf(v - mx);
  }
}

// Combines every thread's (mx, s) over the block: returns Σ exp(v − row_max) and sets row_max.
static __device__ __forceinline__ float block_lse(float mx, float s, float& row_max) {
  row_max = ob_block_max(mx);
  return ob_block_sum(mx == -INFINITY ? 0.0f : s * expf(mx - row_max));
}

// s = sigmoid(a + b1) over the (M, H) hidden layer in place: a thread per column j (coalesced), a
// grid-stride loop over the rows.
static __global__ void sigmoid_kernel(ob_bf16* a, const ob_bf16* b1, int64_t M, int64_t H) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= H) return;
  const float bj = ob_load(b1, j);
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    const int64_t i = m * H + j;
    ob_store(a, i, 1.0f / (1.0f + expf(-(ob_load(a, i) + bj))));
  }
}

// out[m] = logsumexp over n of z[m, n] + b2[n]: a block per row.
static __global__ void epilogue_kernel(const float* z, const ob_bf16* b2, ob_bf16* out, int64_t N) {
  const float* row = z + blockIdx.x * N;
  float mx = -INFINITY, s = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) lse_push(row[n] + ob_load(b2, n), mx, s);
  float row_max;
  const float sum = block_lse(mx, s, row_max);
  if (threadIdx.x == 0) ob_store(out, blockIdx.x, row_max + logf(sum));  // out is (M,): the axis is not kept
}

// s (M, H) in bf16, then z (M, N) in fp32 (at a 256-byte boundary).
static uint64_t s_bytes(int64_t M, int64_t H) { return uint64_t(ob_cdiv(M * H * int64_t(sizeof(ob_bf16)), 256) * 256); }

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], H = call->inputs[1].shape[0], N = call->inputs[3].shape[0];
  return s_bytes(M, H) + uint64_t(M * N) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w1 = call->inputs[1];  // (H, K): stored (out, in)
  const ob_tensor& w2 = call->inputs[3];  // (N, H): stored (out, in)
  const int64_t M = x.shape[0], K = x.shape[1], H = w1.shape[0], N = w2.shape[0];
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t blas = ob_blas(stream);
  ob_bf16* s = static_cast<ob_bf16*>(call->workspace);
  float* z = reinterpret_cast<float*>(static_cast<char*>(call->workspace) + s_bytes(M, H));
  OB_CUBLAS_TRY(ob_gemm(blas, false, true, M, H, K, 1.0f, x.data, K, w1.data, K, 0.0f, s, CUDA_R_16BF, H));
  const dim3 grid(unsigned(ob_cdiv(H, kThreads)), unsigned(M < 65535 ? M : 65535));
  sigmoid_kernel<<<grid, kThreads, 0, stream>>>(s, ob_in_bf16(call, 2), M, H);
  OB_CUDA_TRY(cudaGetLastError());
  OB_CUBLAS_TRY(ob_gemm(blas, false, true, M, N, H, 1.0f, s, H, w2.data, H, 0.0f, z, CUDA_R_32F, N));
  epilogue_kernel<<<unsigned(M), kThreads, 0, stream>>>(z, ob_in_bf16(call, 4), ob_out_bf16(call, 0), N);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
