// 31k_Gemm_BatchNorm_GELU_ReLU baseline (cuda): h = x·Wᵀ, training-mode BatchNorm over the M rows (batch
// statistics, biased variance, eps 1e-5) with the affine bn_weight, bn_bias, then relu(gelu_tanh(·)); W
// stored (out, in).
// Estimate (full, 16384×8192×8192; 650 TFLOP/s, 3.5 TB/s): 2.199 TFLOP 3.38 ms + 2.28 GB 0.65 ms ≈ 4.03 ms; XLA 3.37 ms (1.20x).
// Composition, as XLA on a GPU: one cuBLAS GEMM (bf16 operands, fp32 accumulation), then the column
// statistics (a kernel of partial moments over chunks of rows and a small kernel that combines them into
// each column's mean and 1/√(σ² + eps)), then one fused elementwise kernel (normalize, affine, GELU, ReLU).
// The GEMM writes h to the workspace in fp32, since it feeds the batch statistics. The statistics read h
// once, as XLA's multi-output reduction does: the sums of d = h − h[0, n] and d², shifted by the column's
// first value so that E[d²] − E[d]² does not cancel (h's column offsets are ≈ 2x its spread); the chunk
// partials are combined in double.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

static constexpr int kThreads = 256;
static constexpr int64_t kRowsPerChunk = 128;  // rows summed by one thread of the statistics kernel

// GELU, tanh form: 0.5·t·(1 + tanh(√(2/π)·(t + 0.044715·t³))).
static __device__ __forceinline__ float gelu_tanh(float t) {
  return 0.5f * t * (1.0f + tanhf(0.7978845608028654f * (t + 0.044715f * t * t * t)));
}

// Partial moments of column n over the rows of chunk blockIdx.y, shifted by h[0, n]: a thread per column
// (coalesced rows).
static __global__ void stats_kernel(const float* h, float* part_sum, float* part_sq, int64_t M, int64_t N) {
  const int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (n >= N) return;
  const float pilot = h[n];
  const int64_t m0 = blockIdx.y * kRowsPerChunk, m1 = m0 + kRowsPerChunk < M ? m0 + kRowsPerChunk : M;
  float s = 0.0f, q = 0.0f;
  for (int64_t m = m0; m < m1; ++m) {
    const float d = h[m * N + n] - pilot;
    s += d;
    q += d * d;
  }
  part_sum[blockIdx.y * N + n] = s;
  part_sq[blockIdx.y * N + n] = q;
}

// Column n's mean and 1/√(σ² + 1e-5) (biased σ² over the M rows) from the chunks' partial moments.
static __global__ void finalize_kernel(const float* h, const float* part_sum, const float* part_sq, float* mean, float* inv_std,
                                       int64_t M, int64_t N, int64_t chunks) {
  const int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (n >= N) return;
  double s = 0.0, q = 0.0;
  for (int64_t c = 0; c < chunks; ++c) {
    s += double(part_sum[c * N + n]);
    q += double(part_sq[c * N + n]);
  }
  const double md = s / double(M);                        // mean of d = h − h[0, n]
  const double var = fmax(q / double(M) - md * md, 0.0);  // biased variance (of d, hence of h)
  mean[n] = float(double(h[n]) + md);
  inv_std[n] = float(1.0 / sqrt(var + 1e-5));  // eps 1e-5
}

// Epilogue over the (M, N) result: a thread per column n (coalesced), a grid-stride loop over the rows.
static __global__ void epilogue_kernel(const float* h, const float* mean, const float* inv_std, const ob_bf16* bn_weight,
                                       const ob_bf16* bn_bias, ob_bf16* out, int64_t M, int64_t N) {
  const int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (n >= N) return;
  const float mu = mean[n], scale = inv_std[n] * ob_load(bn_weight, n), beta = ob_load(bn_bias, n);
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    const int64_t i = m * N + n;
    const float t = (h[i] - mu) * scale + beta;
    ob_store(out, i, fmaxf(gelu_tanh(t), 0.0f));  // GELU, then ReLU
  }
}

// h (M, N) fp32, the chunks' partial sums and sums of squares (chunks, N) each, then mean and inv_std (N,).
static uint64_t workspace_floats(int64_t M, int64_t N) {
  const int64_t chunks = ob_cdiv(M, kRowsPerChunk);
  return uint64_t(M * N + 2 * chunks * N + 2 * N);
}

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return workspace_floats(call->inputs[0].shape[0], call->inputs[1].shape[0]) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];  // (N, K): stored (out, in)
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[0];
  const int64_t chunks = ob_cdiv(M, kRowsPerChunk);
  if (chunks > 65535) return 1;  // grid.y of the statistics kernel
  cudaStream_t stream = ob_stream(call);
  float* h = static_cast<float*>(call->workspace);
  float* part_sum = h + M * N;
  float* part_sq = part_sum + chunks * N;
  float* mean = part_sq + chunks * N;
  float* inv_std = mean + N;
  OB_CUBLAS_TRY(ob_gemm(ob_blas(stream), false, true, M, N, K, 1.0f, x.data, K, w.data, K, 0.0f, h, CUDA_R_32F, N));
  const unsigned col_blocks = unsigned(ob_cdiv(N, kThreads));
  stats_kernel<<<dim3(col_blocks, unsigned(chunks)), kThreads, 0, stream>>>(h, part_sum, part_sq, M, N);
  OB_CUDA_TRY(cudaGetLastError());
  finalize_kernel<<<col_blocks, kThreads, 0, stream>>>(h, part_sum, part_sq, mean, inv_std, M, N, chunks);
  OB_CUDA_TRY(cudaGetLastError());
  const dim3 grid(col_blocks, unsigned(M < 65535 ? M : 65535));
  epilogue_kernel<<<grid, kThreads, 0, stream>>>(h, mean, inv_std, ob_in_bf16(call, 2), ob_in_bf16(call, 3), ob_out_bf16(call, 0), M, N);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
