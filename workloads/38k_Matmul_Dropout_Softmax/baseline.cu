// 38k_Matmul_Dropout_Softmax baseline (cuda): out = softmax over n of x·Wᵀ + b (dropout in inference mode:
// the identity), W stored (out, in).
// Estimate (full, 4096×8192×8192; 650 TFLOP/s, 3.5 TB/s): 0.550 TFLOP 0.85 ms + 0.54 GB 0.15 ms ≈ 1.00 ms; XLA 1.06 ms (0.94x).
// Composition, as XLA on a GPU: one cuBLAS GEMM (bf16 operands, fp32 accumulation), then one fused row kernel
// (a block per row) for + b and the row softmax (one pass for the max and the sum, one to write). The GEMM
// writes h to the workspace in fp32, since it feeds the softmax's max and sum over 8192 columns.
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

// out[m, n] = exp(v − max v) / Σ exp(v − max v) with v = h[m, n] + b[n]: a block per row, one pass for the
// running max and sum, one (from cache) to write.
static __global__ void epilogue_kernel(const float* h, const ob_bf16* b, ob_bf16* out, int64_t N) {
  const float* row = h + blockIdx.x * N;
  ob_bf16* orow = out + blockIdx.x * N;
  float mx = -INFINITY, s = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) lse_push(row[n] + ob_load(b, n), mx, s);
  float row_max;
  const float inv_sum = 1.0f / block_lse(mx, s, row_max);
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) ob_store(orow, n, expf(row[n] + ob_load(b, n) - row_max) * inv_sum);
}

// h = x·Wᵀ, (M, N) in fp32.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * uint64_t(call->inputs[1].shape[0]) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];  // (N, K): stored (out, in)
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[0];
  cudaStream_t stream = ob_stream(call);
  float* h = static_cast<float*>(call->workspace);
  OB_CUBLAS_TRY(ob_gemm(ob_blas(stream), false, true, M, N, K, 1.0f, x.data, K, w.data, K, 0.0f, h, CUDA_R_32F, N));
  epilogue_kernel<<<unsigned(M), kThreads, 0, stream>>>(h, ob_in_bf16(call, 2), ob_out_bf16(call, 0), N);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
