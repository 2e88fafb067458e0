// 26k_BMM_InstanceNorm_Sum_ResidualAdd_Multiply baseline (cuda): h = x·Wᵀ + b viewed as (M, C, 8, 8), C =
// N/64, an instance norm of each (m, c) over its 64 values with the affine in_weight[c], in_bias[c], then out
// = (z + y)·y; W stored (out, in).
// Estimate (full, 4096×8192×8192; 650 TFLOP/s, 3.5 TB/s): 0.550 TFLOP 0.85 ms + 0.60 GB 0.17 ms ≈ 1.02 ms; XLA 0.995 ms (1.02x).
// Composition, as XLA on a GPU: one cuBLAS GEMM (bf16 operands, fp32 accumulation), then one fused row kernel
// (a block per row, a warp per channel) for + b, the instance norm, the affine, the residual add of y and the
// product with y. The GEMM writes h to the workspace in fp32, since it feeds the instance-norm statistics
// (mean, then the biased variance around it, in fp32, eps 1e-5, as reference.cpp).
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

static constexpr int kThreads = 256;  // a multiple of 32 (warp and block reductions)

// Row m: channel c is the S = 64 columns [c·S, c·S + S) of h + b. A block per row; each warp takes one
// channel at a time: its mean, then the centered variance (the second pass reads the channel from cache),
// then z = ĥ · in_weight[c] + in_bias[c] and out = (z + y) · y.
static __global__ void epilogue_kernel(const float* h, const ob_bf16* b, const ob_bf16* in_weight, const ob_bf16* in_bias,
                                       const ob_bf16* y, ob_bf16* out, int64_t N, int64_t S) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const float* row = h + blockIdx.x * N;
  const ob_bf16* yrow = y + blockIdx.x * N;
  ob_bf16* orow = out + blockIdx.x * N;
  for (int64_t c = warp; c < N / S; c += warps) {  // warp-uniform: every lane takes part in the reductions
    const int64_t n0 = c * S;
    float sum = 0.0f;
    for (int64_t j = lane; j < S; j += 32) sum += row[n0 + j] + ob_load(b, n0 + j);
    const float mean = ob_warp_sum(sum) / float(S);
    float sq = 0.0f;
    for (int64_t j = lane; j < S; j += 32) {
      const float d = row[n0 + j] + ob_load(b, n0 + j) - mean;
      sq += d * d;
    }
    const float inv_std = 1.0f / sqrtf(ob_warp_sum(sq) / float(S) + 1e-5f);  // biased variance, eps 1e-5
    const float gamma = ob_load(in_weight, c), beta = ob_load(in_bias, c);
    for (int64_t j = lane; j < S; j += 32) {
      const int64_t n = n0 + j;
      const float z = (row[n] + ob_load(b, n) - mean) * inv_std * gamma + beta;
      const float yv = ob_load(yrow, n);
      ob_store(orow, n, (z + yv) * yv);  // residual add of y, then multiply by y
    }
  }
}

// h = x·Wᵀ, (M, N) in fp32.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * uint64_t(call->inputs[2].shape[0]) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[2];  // (N, K): stored (out, in); inputs are x, y, W, b, in_weight, in_bias
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[0];
  const int64_t C = call->inputs[4].shape[0];  // in_weight: one per channel of S = N / C (= 64) columns
  if (C <= 0 || N % C != 0) return 1;
  cudaStream_t stream = ob_stream(call);
  float* h = static_cast<float*>(call->workspace);
  OB_CUBLAS_TRY(ob_gemm(ob_blas(stream), false, true, M, N, K, 1.0f, x.data, K, w.data, K, 0.0f, h, CUDA_R_32F, N));
  epilogue_kernel<<<unsigned(M), kThreads, 0, stream>>>(h, ob_in_bf16(call, 3), ob_in_bf16(call, 4), ob_in_bf16(call, 5),
                                                        ob_in_bf16(call, 1), ob_out_bf16(call, 0), N, N / C);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
