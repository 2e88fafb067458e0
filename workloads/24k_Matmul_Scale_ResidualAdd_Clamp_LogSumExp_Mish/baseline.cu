// 24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish baseline (cuda): t = clip(2·(x·Wᵀ + b) doubled, −10, 10),
// L[m] = logsumexp_n t[m, n], out = L · mish(L), W stored (out, in).
// Estimate (full, 4096×8192×8192; 650 TFLOP/s, 3.5 TB/s): 0.550 TFLOP 0.85 ms + 0.47 GB 0.13 ms ≈ 0.98 ms; XLA 0.96 ms (1.02x).
// Composition, as XLA on a GPU: one cuBLAS GEMM (bf16 operands, fp32 accumulation), then one fused row kernel
// (a block per row) for + b, · 2, the residual add, the clamp, the row logsumexp and L · mish(L). The GEMM
// writes h to the workspace in fp32, since it feeds a logsumexp over 8192 columns.
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

// t = clip(2·(h + b) + 2·(h + b), −10, 10), L = logsumexp over the row, out = L · mish(L): a block per row.
static __global__ void epilogue_kernel(const float* h, const ob_bf16* b, ob_bf16* out, int64_t N) {
  const float* row = h + blockIdx.x * N;
  float mx = -INFINITY, s = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) {
    float v = 2.0f * (row[n] + ob_load(b, n));        // scale_factor 2.0
    v = v + v;                                         // residual add: x + x
    lse_push(fminf(fmaxf(v, -10.0f), 10.0f), mx, s);  // clamp [−10, 10]
  }
  float row_max;
  const float sum = block_lse(mx, s, row_max);
  if (threadIdx.x == 0) {
    const float L = row_max + logf(sum);                         // logsumexp, keepdims: out is (M, 1)
    const float sp = fmaxf(L, 0.0f) + log1pf(expf(-fabsf(L)));  // softplus, stable form
    ob_store(out, blockIdx.x, L * (L * tanhf(sp)));              // L · mish(L)
  }
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
