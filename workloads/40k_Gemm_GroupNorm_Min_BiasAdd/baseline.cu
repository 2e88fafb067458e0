// 40k_Gemm_GroupNorm_Min_BiasAdd baseline (cuda): r[m] = min over n of GroupNorm16(x·Wᵀ + lb)[m, n] (affine
// gn_weight, gn_bias), then out[0, c, m, 0] = r[m] + bias[c]; W stored (out, in).
// Estimate (full, 4096×8192×8192; 650 TFLOP/s, 3.5 TB/s): 0.550 TFLOP 0.85 ms + 0.54 GB 0.15 ms ≈ 1.00 ms; XLA 1.05 ms (0.95x).
// Composition, as XLA on a GPU: one cuBLAS GEMM (bf16 operands, fp32 accumulation), then one fused row kernel
// (a block per row, a warp per group) and one broadcast kernel for + lb, the group norm and its affine and
// the row min (into r, fp32 in the workspace), then the (1, N, M, 1) broadcast r[m] + bias[c]. The GEMM
// writes h to the workspace in fp32, since it feeds the group-norm statistics (mean, then the biased variance
// around it, in fp32, eps 1e-5, as reference.cpp).
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

static constexpr int kThreads = 256;  // a multiple of 32 (warp and block reductions)
static constexpr int64_t kGroup = 16;  // features per GroupNorm group: one per lane of a half-warp

// Row m: group g is the 16 columns [16g, 16g + 16) of h + lb, one per lane of a half-warp (xor shuffles with
// offsets below 16 stay inside a half-warp). A block per row; each warp takes two groups at a time: their
// means, centered variances and y = ĥ · gn_weight[n] + gn_bias[n]; r[m] = min over the row of y.
static __global__ void epilogue_kernel(const float* h, const ob_bf16* lb, const ob_bf16* gn_weight, const ob_bf16* gn_bias,
                                       float* r, int64_t N) {
  const int lane = threadIdx.x & 31;
  const float* row = h + blockIdx.x * N;
  float row_min = INFINITY;
  for (int64_t n0 = threadIdx.x - lane; n0 < N; n0 += blockDim.x) {  // warp-uniform: every lane shuffles
    const int64_t n = n0 + lane;  // N % 16 == 0: a half-warp is all inside the row or all past its end
    const float v = n < N ? row[n] + ob_load(lb, n) : 0.0f;
    float sum = v;
    for (int offset = kGroup / 2; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float d = v - sum / float(kGroup);
    float sq = d * d;
    for (int offset = kGroup / 2; offset > 0; offset >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, offset);
    if (n < N) {
      const float inv_std = 1.0f / sqrtf(sq / float(kGroup) + 1e-5f);  // biased variance, eps 1e-5
      row_min = fminf(row_min, d * inv_std * ob_load(gn_weight, n) + ob_load(gn_bias, n));
    }
  }
  row_min = -ob_block_max(-row_min);
  if (threadIdx.x == 0) r[blockIdx.x] = row_min;
}

// out[0, c, m, 0] = r[m] + bias[0, c, 0, 0]: out is (1, N, M, 1), so m is the fast index. A thread per m
// (coalesced), a grid-stride loop over c.
static __global__ void broadcast_kernel(const float* r, const ob_bf16* bias, ob_bf16* out, int64_t M, int64_t N) {
  const int64_t m = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (m >= M) return;
  const float rm = r[m];
  for (int64_t c = blockIdx.y; c < N; c += gridDim.y) ob_store(out, c * M + m, rm + ob_load(bias, c));
}

// h = x·Wᵀ, (M, N) in fp32, then the M row minima r in fp32.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->inputs[0].shape[0]) * uint64_t(call->inputs[1].shape[0]) * sizeof(float) +
         uint64_t(call->inputs[0].shape[0]) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];  // (N, K): stored (out, in)
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[0];
  if (N % kGroup != 0) return 1;  // N is a multiple of 16 at every size
  cudaStream_t stream = ob_stream(call);
  float* h = static_cast<float*>(call->workspace);
  OB_CUBLAS_TRY(ob_gemm(ob_blas(stream), false, true, M, N, K, 1.0f, x.data, K, w.data, K, 0.0f, h, CUDA_R_32F, N));
  float* r = h + M * N;
  epilogue_kernel<<<unsigned(M), kThreads, 0, stream>>>(h, ob_in_bf16(call, 2), ob_in_bf16(call, 3), ob_in_bf16(call, 4), r, N);
  OB_CUDA_TRY(cudaGetLastError());
  const dim3 grid(unsigned(ob_cdiv(M, kThreads)), unsigned(N < 65535 ? N : 65535));
  broadcast_kernel<<<grid, kThreads, 0, stream>>>(r, ob_in_bf16(call, 5), ob_out_bf16(call, 0), M, N);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
