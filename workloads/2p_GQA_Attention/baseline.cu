// 2p_GQA_Attention baseline (cuda). Estimate at full size (B=4, S=4096, Hq=128, Hkv=8, D=128): GEMMs 4.4 TFLOP as written
// ≈ 6.8 ms at 650 TFLOP/s, score traffic ≈ 60 GB (bf16 scores written 17.2 GB, softmax reads the causal half 8.6 GB and writes
// 17.2 GB, P·V reads 17.2 GB) ≈ 17 ms at 3.5 TB/s, partly overlapped: ≈ 19-22 ms against XLA's 27.24 ms.
//
// As 1p_Flash_Attention (what XLA emits without a fused attention kernel: batched cuBLAS GEMM for the scores in bf16, one
// mask + softmax fusion in fp32, batched GEMM with V), with the [B, S, H, D] layout read in place through the leading
// dimensions (row stride Hq·D for q and out, Hkv·D for k and v) and no G-fold copy of k and v: one strided-batched GEMM per
// (batch, kv head) over its G = Hq/Hkv query heads (A stride D from head to head, the shared K or V with batch stride 0).
// Scores of `hc` (batch, query head) pairs per chunk, at most 4 GiB of bf16 (four chunks of 128 heads at full size); the
// softmax (fp32, probabilities written in place in bf16, 0 for j > i) reads only the causal part of each row.
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

// End of the run of flat heads starting at bh that share its (batch, kv head): the group's last query head, the batch's last
// head, or the chunk's end c1, whichever comes first.
int64_t run_end(int64_t bh, int64_t c1, int64_t Hq, int64_t G) {
  const int64_t b = bh / Hq, g = (bh % Hq) / G;
  int64_t end = b * Hq + (g + 1) * G;
  if (end > (b + 1) * Hq) end = (b + 1) * Hq;
  return end < c1 ? end : c1;
}

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t BH = q.shape[0] * q.shape[2], S = q.shape[1];
  return uint64_t(heads_per_chunk(BH, S) * S * S) * sizeof(ob_bf16);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], S = q.shape[1], Hq = q.shape[2], D = q.shape[3];
  const int64_t Hkv = call->inputs[1].shape[2];
  const int64_t G = Hq / Hkv, BH = B * Hq;  // query heads per kv head; query head h reads kv head h / G
  const ob_bf16* Q = ob_in_bf16(call, 0);
  const ob_bf16* K = ob_in_bf16(call, 1);
  const ob_bf16* V = ob_in_bf16(call, 2);
  ob_bf16* O = ob_out_bf16(call, 0);
  ob_bf16* P = static_cast<ob_bf16*>(call->workspace);
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t h = ob_blas(stream);
  const float scale = float(1.0 / sqrt(double(D)));
  const int64_t ldq = Hq * D, ldkv = Hkv * D;  // row (token) strides
  const size_t smem = size_t(S) * sizeof(float);
  if (smem > 48 * 1024)
    OB_CUDA_TRY(cudaFuncSetAttribute(causal_softmax, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t hc = heads_per_chunk(BH, S);
  // Chunk [c0, c1) of the flat (batch, query head) index bh = b·Hq + h; its scores P[(bh - c0), S, S]. Within a chunk, each run
  // of query heads sharing one (batch, kv head) is one strided-batched GEMM with the kv operand at batch stride 0.
  for (int64_t c0 = 0; c0 < BH; c0 += hc) {
    const int64_t c1 = BH - c0 < hc ? BH : c0 + hc;
    for (int64_t bh = c0; bh < c1;) {
      const int64_t b = bh / Hq, hq = bh % Hq, g = hq / G, end = run_end(bh, c1, Hq, G), run = end - bh;
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, true, S, S, D, scale, Q + (b * S * Hq + hq) * D, ldq, D, K + (b * S * Hkv + g) * D,
                                    ldkv, 0, 0.0f, P + (bh - c0) * S * S, CUDA_R_16BF, S, S * S, run));
      bh = end;
    }
    causal_softmax<<<unsigned((c1 - c0) * S), kSoftmaxThreads, smem, stream>>>(P, int(S));
    OB_CUDA_TRY(cudaGetLastError());
    for (int64_t bh = c0; bh < c1;) {
      const int64_t b = bh / Hq, hq = bh % Hq, g = hq / G, end = run_end(bh, c1, Hq, G), run = end - bh;
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, S, D, S, 1.0f, P + (bh - c0) * S * S, S, S * S, V + (b * S * Hkv + g) * D,
                                    ldkv, 0, 0.0f, O + (b * S * Hq + hq) * D, CUDA_R_16BF, ldq, D, run));
      bh = end;
    }
  }
  return 0;
}
