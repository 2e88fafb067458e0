// 48k_Matmul_BatchNorm_BiasAdd_Divide_Swish baseline (cuda): out = swish((BN_eval(x·W + lb) + bias) / 2), W
// stored (in, out), BatchNorm in eval mode with the given running statistics (eps 1e-5).
// Estimate (full, 4096×8192×8192; 650 TFLOP/s, 3.5 TB/s): 0.550 TFLOP 0.85 ms + 0.40 GB 0.12 ms ≈ 0.96 ms; XLA 1.11 ms (0.87x).
// Composition, as XLA on a GPU: one cuBLAS GEMM (bf16 operands, fp32 accumulation), then one fused
// elementwise epilogue (+ lb, BatchNorm with running stats, + bias, / 2, swish, in fp32). The GEMM writes h =
// x·W in bf16 straight into `out` (XLA rounds the dot to bf16 too; the epilogue is purely elementwise, no
// workspace) and the epilogue rewrites `out` in place.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

static constexpr int kThreads = 256;

// swish(t) = t · sigmoid(t) = t / (1 + exp(−t)).
static __device__ __forceinline__ float swish(float t) { return t / (1.0f + expf(-t)); }

// Epilogue over the (M, N) GEMM result in place: a thread per column n (coalesced), a grid-stride loop
// over the rows. The column's BatchNorm constants are computed once per thread; `bias` is the (1,)
// scalar, read on the device.
static __global__ void epilogue_kernel(ob_bf16* out, const ob_bf16* lb, const ob_bf16* bn_scale, const ob_bf16* bn_bias,
                                       const ob_bf16* bn_mean, const ob_bf16* bn_var, const ob_bf16* bias, int64_t M, int64_t N) {
  const int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (n >= N) return;
  const float lbn = ob_load(lb, n), gamma = ob_load(bn_scale, n), beta = ob_load(bn_bias, n), mean = ob_load(bn_mean, n);
  const float inv_std = 1.0f / sqrtf(ob_load(bn_var, n) + 1e-5f);  // eps 1e-5
  const float bias0 = ob_load(bias, 0);
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    const int64_t i = m * N + n;
    const float h = ob_load(out, i) + lbn;
    const float y = gamma * (h - mean) * inv_std + beta;
    ob_store(out, i, swish((y + bias0) / 2.0f));  // divide_value 2.0
  }
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];  // (K, N): stored (in, out)
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[1];
  cudaStream_t stream = ob_stream(call);
  ob_bf16* out = ob_out_bf16(call, 0);
  OB_CUBLAS_TRY(ob_gemm(ob_blas(stream), false, false, M, N, K, 1.0f, x.data, K, w.data, N, 0.0f, out, CUDA_R_16BF, N));
  const dim3 grid(unsigned(ob_cdiv(N, kThreads)), unsigned(M < 65535 ? M : 65535));
  epilogue_kernel<<<grid, kThreads, 0, stream>>>(out, ob_in_bf16(call, 2), ob_in_bf16(call, 3), ob_in_bf16(call, 4),
                                                 ob_in_bf16(call, 5), ob_in_bf16(call, 6), ob_in_bf16(call, 7), M, N);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
