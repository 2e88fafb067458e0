// 43k_Gemm_BatchNorm_Scaling_Softmax baseline (cuda): out = softmax over n of scale·BN_eval(x·W + b), W
// stored (in, out), BatchNorm in eval mode with the given running statistics (eps 1e-5).
// Estimate (full, 4096×8192×8192; 650 TFLOP/s, 3.5 TB/s): 0.550 TFLOP 0.85 ms + 0.54 GB 0.15 ms ≈ 1.00 ms; XLA 1.12 ms (0.89x).
// Composition, as XLA on a GPU: one cuBLAS GEMM (bf16 operands, fp32 accumulation), then one fused row kernel
// (a block per row) for + b, the BatchNorm, the scaling and the row softmax (one pass for the max and the
// sum, one to write; the logits are recomputed, not stored). The GEMM writes h to the workspace in fp32,
// since it feeds the softmax's max and sum over 8192 columns.
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

// The logit z[m, n] = scale · (bn_scale[n] · (h[m, n] + b[n] − bn_mean[n]) / √(bn_var[n] + 1e-5) + bn_bias[n]).
static __device__ __forceinline__ float logit(const float* row, const ob_bf16* b, const ob_bf16* bn_scale, const ob_bf16* bn_bias,
                                              const ob_bf16* bn_mean, const ob_bf16* bn_var, float scale, int64_t n) {
  const float bn = ob_load(bn_scale, n) * (row[n] + ob_load(b, n) - ob_load(bn_mean, n)) / sqrtf(ob_load(bn_var, n) + 1e-5f) +
                   ob_load(bn_bias, n);
  return scale * bn;
}

// out[m, :] = softmax of the row's logits: a block per row, one pass for the running max and sum, one
// (from cache) to write. `scale` is the (1,) scalar, read on the device.
static __global__ void epilogue_kernel(const float* h, const ob_bf16* b, const ob_bf16* bn_scale, const ob_bf16* bn_bias,
                                       const ob_bf16* bn_mean, const ob_bf16* bn_var, const ob_bf16* scale_p, ob_bf16* out,
                                       int64_t N) {
  const float* row = h + blockIdx.x * N;
  ob_bf16* orow = out + blockIdx.x * N;
  const float scale = ob_load(scale_p, 0);
  float mx = -INFINITY, s = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x)
    lse_push(logit(row, b, bn_scale, bn_bias, bn_mean, bn_var, scale, n), mx, s);
  float row_max;
  const float inv_sum = 1.0f / block_lse(mx, s, row_max);
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x)
    ob_store(orow, n, expf(logit(row, b, bn_scale, bn_bias, bn_mean, bn_var, scale, n) - row_max) * inv_sum);
}

// h = x·W, (M, N) in fp32.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * uint64_t(call->inputs[1].shape[1]) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];  // (K, N): stored (in, out)
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[1];
  cudaStream_t stream = ob_stream(call);
  float* h = static_cast<float*>(call->workspace);
  OB_CUBLAS_TRY(ob_gemm(ob_blas(stream), false, false, M, N, K, 1.0f, x.data, K, w.data, N, 0.0f, h, CUDA_R_32F, N));
  epilogue_kernel<<<unsigned(M), kThreads, 0, stream>>>(h, ob_in_bf16(call, 2), ob_in_bf16(call, 3), ob_in_bf16(call, 4),
                                                        ob_in_bf16(call, 5), ob_in_bf16(call, 6), ob_in_bf16(call, 7),
                                                        ob_out_bf16(call, 0), N);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
