// 1p_Flash_Attention baseline (cuda). Estimate at full size (B=4, H=64, S=4096, D=128): GEMMs 2.2 TFLOP as written ≈ 3.4 ms at
// 650 TFLOP/s, score traffic ≈ 30 GB (bf16 scores written 8.6 GB, softmax reads the causal half 4.3 GB and writes 8.6 GB, P·V
// reads 8.6 GB) ≈ 8.6 ms at 3.5 TB/s, partly overlapped with the GEMMs: ≈ 9-11 ms against XLA's 13.24 ms.
//
// What XLA emits for this jnp attention on a GPU (no fused attention kernel): a batched cuBLAS GEMM for the scores Q·Kᵀ with
// the result in bf16 (as JAX rounds every dot result to the input dtype), one fusion for mask + softmax (fp32 inside, bf16
// probabilities out), and a batched GEMM P·V. Here:
//   1. scores = D^(-1/2)·Q·Kᵀ per (batch, head), bf16, into a workspace of `hc` heads' S×S scores (hc heads per chunk, the
//      workspace at most 4 GiB: two chunks of 128 heads at full size);
//   2. one kernel, a block per score row: reads the row's causal part (j ≤ i) once into shared memory as fp32, max, exp, sum,
//      and writes the probabilities in place in bf16, 0 where j > i (the -1e9 of the reference gives exp = 0 exactly);
//   3. out = P·V per head, bf16 (fp32 accumulation).
// The full S×S products are computed as XLA does; only the softmax skips reading the masked half. The scale is applied in the
// GEMM's alpha in fp32 before the bf16 rounding of the scores.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int kSoftmaxThreads = 256;              // a multiple of 32 (block reductions)
constexpr uint64_t kScoreBudget = 4ull << 30;     // bytes of bf16 scores per chunk

// Heads per chunk: as many as fit the budget, spread evenly over the chunks.
int64_t heads_per_chunk(int64_t heads, int64_t S) {
  const int64_t per_head = S * S * int64_t(sizeof(ob_bf16));
  int64_t fit = int64_t(kScoreBudget) / per_head;
  if (fit < 1) fit = 1;
  if (fit > heads) fit = heads;
  const int64_t chunks = ob_cdiv(heads, fit);
  return ob_cdiv(heads, chunks);
}

// Two bf16 packed in a 32-bit word to / from floats (memcpy, not pointer casts, between the types: no aliasing questions).
__device__ __forceinline__ float2 unpack2(unsigned w) {
  __nv_bfloat162 h;
  memcpy(&h, &w, sizeof h);
  return __bfloat1622float2(h);
}
__device__ __forceinline__ unsigned pack2(float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  unsigned w;
  memcpy(&w, &h, sizeof w);
  return w;
}

// 8 consecutive bf16 (16-byte aligned) to / from floats, one 16-byte access.
__device__ __forceinline__ void load8(const ob_bf16* p, float* f) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 v = unpack2(w[k]);
    f[2 * k] = v.x;
    f[2 * k + 1] = v.y;
  }
}
__device__ __forceinline__ void store8(ob_bf16* p, const float* f) {
  *reinterpret_cast<uint4*>(p) = make_uint4(pack2(f[0], f[1]), pack2(f[2], f[3]), pack2(f[4], f[5]), pack2(f[6], f[7]));
}

// One block per score row r of the chunk (rows·S bf16 scores, row stride S); query i = r mod S sees keys j ≤ i. The visible
// scores are read once into shared memory (S floats), the probabilities are written in place, 0 for j > i.
// Vector path (S a multiple of 8): thread-owned chunks of 8 columns; element e of chunk c is kept at srow[e·NC + c]
// (NC = S/8 chunks) so that the shared-memory accesses of a warp fall in distinct banks.
__global__ void __launch_bounds__(kSoftmaxThreads) causal_softmax(ob_bf16* P, int S) {
  extern __shared__ float srow[];
  const int64_t r = blockIdx.x;
  const int i = int(r % S), n = i + 1;  // keys 0 .. i
  ob_bf16* p = P + r * S;
  float m = -INFINITY;
  if ((S & 7) == 0) {
    const int NC = S >> 3, nc = (n + 7) >> 3;  // chunks of the row, chunks holding visible keys
    for (int c = threadIdx.x; c < nc; c += blockDim.x) {
      float f[8];
      load8(p + c * 8, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float v = c * 8 + e < n ? f[e] : -INFINITY;
        srow[e * NC + c] = v;
        m = fmaxf(m, v);
      }
    }
    m = ob_block_max(m);
    float sum = 0.0f;
    for (int e = 0; e < 8; ++e)
      for (int c = threadIdx.x; c < nc; c += blockDim.x) {
        const float x = expf(srow[e * NC + c] - m);  // -inf (masked) gives 0
        srow[e * NC + c] = x;
        sum += x;
      }
    sum = ob_block_sum(sum);
    const float inv = 1.0f / sum;
    for (int c = threadIdx.x; c < NC; c += blockDim.x) {
      float f[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] = c < nc ? srow[e * NC + c] * inv : 0.0f;
      store8(p + c * 8, f);
    }
  } else {
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float v = ob_load(p, j);
      srow[j] = v;
      m = fmaxf(m, v);
    }
    m = ob_block_max(m);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float x = expf(srow[j] - m);
      srow[j] = x;
      sum += x;
    }
    sum = ob_block_sum(sum);
    const float inv = 1.0f / sum;
    for (int j = threadIdx.x; j < S; j += blockDim.x) ob_store(p, j, j < n ? srow[j] * inv : 0.0f);
  }
}

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t BH = q.shape[0] * q.shape[1], S = q.shape[2];
  return uint64_t(heads_per_chunk(BH, S) * S * S) * sizeof(ob_bf16);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3], BH = B * H;
  const ob_bf16* Q = ob_in_bf16(call, 0);
  const ob_bf16* K = ob_in_bf16(call, 1);
  const ob_bf16* V = ob_in_bf16(call, 2);
  ob_bf16* O = ob_out_bf16(call, 0);
  ob_bf16* P = static_cast<ob_bf16*>(call->workspace);
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t h = ob_blas(stream);
  const float scale = float(1.0 / sqrt(double(D)));
  const size_t smem = size_t(S) * sizeof(float);
  if (smem > 48 * 1024)
    OB_CUDA_TRY(cudaFuncSetAttribute(causal_softmax, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t hc = heads_per_chunk(BH, S);
  // Heads are contiguous (S×D each) in every tensor: head bh of the chunk starting at c0 is at (c0 + bh)·S·D.
  for (int64_t c0 = 0; c0 < BH; c0 += hc) {
    const int64_t heads = BH - c0 < hc ? BH - c0 : hc;
    OB_CUBLAS_TRY(ob_gemm_batched(h, false, true, S, S, D, scale, Q + c0 * S * D, D, S * D, K + c0 * S * D, D, S * D, 0.0f, P,
                                  CUDA_R_16BF, S, S * S, heads));
    causal_softmax<<<unsigned(heads * S), kSoftmaxThreads, smem, stream>>>(P, int(S));
    OB_CUDA_TRY(cudaGetLastError());
    OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, S, D, S, 1.0f, P, S, S * S, V + c0 * S * D, D, S * D, 0.0f, O + c0 * S * D,
                                  CUDA_R_16BF, D, S * D, heads));
  }
  return 0;
}
