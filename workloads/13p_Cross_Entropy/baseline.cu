// 13p_Cross_Entropy baseline (cuda). Estimate at full size: 8.61e12 FLOP / 650 TFLOP/s = 13.2 ms for
// the LM-head GEMM + the bf16 logits written and read once (2 × 2.1 GB / 3.5 TB/s = 1.2 ms)
// -> ~14.4 ms (XLA: 14.76 ms).
//
// What XLA emits for the unfused LM-head loss: a cuBLAS GEMM z = hidden·W with a bf16 result (JAXBench
// computes the logits in bf16), then a row-reduction fusion per token: max, Σ exp(z - max), log and
// the label gather, in fp32 on the bf16 logits. Here the tokens are processed in chunks so that the
// logit buffer stays ≤ 1 GiB (2 chunks of 4096 rows at full size); per chunk one GEMM into the
// workspace and one kernel with a block per row that does an online (running max, rescaled sum)
// logsumexp in a single pass with 16-byte loads, then loss = max + log Σ - z[label] in fp32.
// The logit rows are padded to a multiple of 8 (ldc of the GEMM) so every row is 16-byte aligned;
// the padding columns are never counted. An out-of-range label gives NaN (the reference's error).
// Precision: bf16 logits (|z| ≲ 20) put ≈ 0.04 of error on the worst losses ≈ 17, far inside
// atol + rtol·|loss| ≈ 0.36.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int kThreads = 512;
constexpr uint64_t kMaxLogitBytes = uint64_t(1) << 30;

struct Chunking {
  int64_t ldz;   // padded row length of the logit buffer
  int64_t rows;  // tokens per chunk
};

Chunking chunking(int64_t T, int64_t V) {
  Chunking c;
  c.ldz = (V + 7) / 8 * 8;
  const uint64_t row_bytes = uint64_t(c.ldz) * sizeof(ob_bf16);
  int64_t cap = int64_t(kMaxLogitBytes / row_bytes);
  if (cap < 1) cap = 1;
  const int64_t chunks = T > 0 ? ob_cdiv(T, cap) : 1;
  c.rows = T > 0 ? ob_cdiv(T, chunks) : 1;
  return c;
}

union Vec8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

// One block per token of the chunk: z is the token's row of V logits (ldz apart, 16-byte aligned).
__global__ void __launch_bounds__(kThreads) cross_entropy_kernel(const ob_bf16* __restrict__ Z, int64_t ldz, int64_t V,
                                                                 const int32_t* __restrict__ labels, float* __restrict__ loss) {
  const int64_t r = blockIdx.x;
  const ob_bf16* z = Z + r * ldz;
  const int64_t units = ldz / 8;
  float m = -INFINITY, s = 0.0f;  // this thread's running max and Σ exp(z - m)
  for (int64_t u = threadIdx.x; u < units; u += kThreads) {
    Vec8 v;
    v.u = reinterpret_cast<const uint4*>(z)[u];
    float f[8];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 p = __bfloat1622float2(v.h[k]);
      f[2 * k] = p.x;
      f[2 * k + 1] = p.y;
    }
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if (u * 8 + k >= V) f[k] = -INFINITY;  // padding columns of the last unit
      mx = fmaxf(mx, f[k]);
    }
    if (mx > m) {  // rescale the running sum to the new max (exp(-inf) = 0 on the first unit)
      s *= expf(m - mx);
      m = mx;
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) s += expf(f[k] - m);  // masked columns add exp(-inf) = 0
  }
  const float M = ob_block_max(m);
  const float S = ob_block_sum(m == -INFINITY ? 0.0f : s * expf(m - M));
  if (threadIdx.x == 0) {
    const int32_t label = labels[r];
    loss[r] = (label >= 0 && label < V) ? M + logf(S) - ob_load(z, label) : NAN;
  }
}

}  // namespace

// One chunk of bf16 logits, rows × ldz (≤ 1 GiB).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t T = call->inputs[0].shape[0], V = call->inputs[1].shape[1];
  const Chunking c = chunking(T, V);
  return uint64_t(c.rows) * uint64_t(c.ldz) * sizeof(ob_bf16);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t T = call->inputs[0].shape[0], Hd = call->inputs[0].shape[1];
  const int64_t V = call->inputs[1].shape[1];
  const ob_bf16* hidden = ob_in_bf16(call, 0);  // (T, Hd)
  const ob_bf16* W = ob_in_bf16(call, 1);       // (Hd, V), stored (in, out)
  const int32_t* labels = ob_in_i32(call, 2);   // (T,)
  float* loss = static_cast<float*>(call->outputs[0].data);  // (T,) fp32
  ob_bf16* Z = static_cast<ob_bf16*>(call->workspace);
  const Chunking c = chunking(T, V);
  cudaStream_t s = ob_stream(call);
  cublasHandle_t h = ob_blas(s);
  for (int64_t t0 = 0; t0 < T; t0 += c.rows) {
    const int64_t rows = T - t0 < c.rows ? T - t0 : c.rows;
    OB_CUBLAS_TRY(ob_gemm(h, false, false, rows, V, Hd, 1.0f, hidden + t0 * Hd, Hd, W, V, 0.0f, Z, CUDA_R_16BF, c.ldz));
    cross_entropy_kernel<<<unsigned(rows), kThreads, 0, s>>>(Z, c.ldz, V, labels + t0, loss + t0);
    OB_CUDA_TRY(cudaGetLastError());
  }
  return 0;
}
