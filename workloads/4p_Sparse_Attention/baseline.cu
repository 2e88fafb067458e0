// 4p_Sparse_Attention baseline (cuda). Estimate at full size (B=4, Hq=64, Hkv=8, S=4096, D=128): GEMMs 2.2 TFLOP as written
// ≈ 3.4 ms at 650 TFLOP/s, score traffic ≈ 28 GB (bf16 scores written 8.6 GB, softmax reads the kept 24 % ≈ 2.1 GB and writes
// 8.6 GB, P·V reads 8.6 GB) ≈ 8 ms at 3.5 TB/s, partly overlapped: ≈ 9-11 ms against XLA's 13.46 ms.
//
// What XLA emits for the plain-JAX splash-attention baseline on a GPU (dense scores, then the mask): as 1p_Flash_Attention, a
// batched cuBLAS GEMM for the dense scores q·kᵀ in bf16 (q is pre-scaled: alpha = 1), one mask + softmax fusion in fp32, a
// batched GEMM with V. GQA without copying k and v: one strided-batched GEMM per (batch, kv head) over its G = Hq/Hkv query
// heads (consecutive in the [B, H, S, D] layout, batch stride S·D) with the shared K or V at batch stride 0. Scores of `hc`
// (batch, query head) pairs per chunk, at most 4 GiB (two chunks of 128 heads at full size). The softmax reads only the kept
// pairs (window + globals) of each row and writes every probability, 0 for the dropped ones.
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

// One block per score row r of the chunk (rows·S bf16 scores, row stride S), query i = r mod S. Kept keys: the globals
// [0, ge) and the causal window [ws, i], ws = max(0, i - W + 1), ge = min(G, ws) (when G > ws the globals lie inside
// [0, i] = [0, ws) ∪ [ws, i] anyway). Only kept scores are read, into shared memory (S floats); the probabilities are written
// in place, 0 for every dropped pair (the reference's -1e30 gives exp = 0 exactly).
// Vector path (S a multiple of 8): chunks of 8 columns, the chunks [0, a1) covering the globals and [b0, b1) covering the
// window (b0 ≥ a1, so no chunk is visited twice); element e of chunk c is kept at srow[e·NC + c] (NC = S/8) so that the
// shared-memory accesses of a warp fall in distinct banks; dropped elements of a visited chunk hold -inf.
__global__ void __launch_bounds__(kSoftmaxThreads) sparse_softmax(ob_bf16* P, int S, int W, int G) {
  extern __shared__ float srow[];
  const int64_t r = blockIdx.x;
  const int i = int(r % S);
  const int ws = i - W + 1 > 0 ? i - W + 1 : 0, ge = G < ws ? G : ws;
  ob_bf16* p = P + r * S;
  float m = -INFINITY;
  if ((S & 7) == 0) {
    const int NC = S >> 3;
    const int a1 = (ge + 7) >> 3, b0 = (ws >> 3) > a1 ? (ws >> 3) : a1, b1 = (i + 8) >> 3, nv = a1 + (b1 - b0);
    for (int u = threadIdx.x; u < nv; u += blockDim.x) {
      const int c = u < a1 ? u : b0 + (u - a1);
      float f[8];
      load8(p + c * 8, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int j = c * 8 + e;
        const float v = (j < ge || (j >= ws && j <= i)) ? f[e] : -INFINITY;
        srow[e * NC + c] = v;
        m = fmaxf(m, v);
      }
    }
    m = ob_block_max(m);
    float sum = 0.0f;
    for (int e = 0; e < 8; ++e)
      for (int u = threadIdx.x; u < nv; u += blockDim.x) {
        const int c = u < a1 ? u : b0 + (u - a1);
        const float x = expf(srow[e * NC + c] - m);  // -inf (dropped) gives 0
        srow[e * NC + c] = x;
        sum += x;
      }
    sum = ob_block_sum(sum);
    const float inv = 1.0f / sum;
    for (int c = threadIdx.x; c < NC; c += blockDim.x) {
      const bool visited = c < a1 || (c >= b0 && c < b1);
      float f[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] = visited ? srow[e * NC + c] * inv : 0.0f;
      store8(p + c * 8, f);
    }
  } else {
    const int nk = ge + (i - ws + 1);  // kept keys; compact index u maps to key j
    for (int u = threadIdx.x; u < nk; u += blockDim.x) {
      const int j = u < ge ? u : ws + (u - ge);
      const float v = ob_load(p, j);
      srow[j] = v;
      m = fmaxf(m, v);
    }
    m = ob_block_max(m);
    float sum = 0.0f;
    for (int u = threadIdx.x; u < nk; u += blockDim.x) {
      const int j = u < ge ? u : ws + (u - ge);
      const float x = expf(srow[j] - m);
      srow[j] = x;
      sum += x;
    }
    sum = ob_block_sum(sum);
    const float inv = 1.0f / sum;
    for (int j = threadIdx.x; j < S; j += blockDim.x)
      ob_store(p, j, (j < ge || (j >= ws && j <= i)) ? srow[j] * inv : 0.0f);
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
  const int64_t BH = q.shape[0] * q.shape[1], S = q.shape[2];
  return uint64_t(heads_per_chunk(BH, S) * S * S) * sizeof(ob_bf16);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], Hq = q.shape[1], S = q.shape[2], D = q.shape[3];
  const int64_t Hkv = call->inputs[1].shape[1];
  const int64_t G = Hq / Hkv, BH = B * Hq;  // query heads per kv head; query head h reads kv head h / G
  const int64_t Wwin = S / 4, Gglob = S / 32;  // sliding window and global keys
  const ob_bf16* Q = ob_in_bf16(call, 0);
  const ob_bf16* K = ob_in_bf16(call, 1);
  const ob_bf16* V = ob_in_bf16(call, 2);
  ob_bf16* O = ob_out_bf16(call, 0);
  ob_bf16* P = static_cast<ob_bf16*>(call->workspace);
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t h = ob_blas(stream);
  const int64_t SD = S * D;  // elements of one head
  const size_t smem = size_t(S) * sizeof(float);
  if (smem > 48 * 1024)
    OB_CUDA_TRY(cudaFuncSetAttribute(sparse_softmax, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t hc = heads_per_chunk(BH, S);
  // Chunk [c0, c1) of the flat (batch, query head) index bh = b·Hq + hq (q and o head at bh·S·D, its kv head at
  // (b·Hkv + hq/G)·S·D); its scores P[bh - c0].
  for (int64_t c0 = 0; c0 < BH; c0 += hc) {
    const int64_t c1 = BH - c0 < hc ? BH : c0 + hc;
    for (int64_t bh = c0; bh < c1;) {
      const int64_t b = bh / Hq, g = (bh % Hq) / G, end = run_end(bh, c1, Hq, G), run = end - bh;
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, true, S, S, D, 1.0f, Q + bh * SD, D, SD, K + (b * Hkv + g) * SD, D, 0, 0.0f,
                                    P + (bh - c0) * S * S, CUDA_R_16BF, S, S * S, run));
      bh = end;
    }
    sparse_softmax<<<unsigned((c1 - c0) * S), kSoftmaxThreads, smem, stream>>>(P, int(S), int(Wwin), int(Gglob));
    OB_CUDA_TRY(cudaGetLastError());
    for (int64_t bh = c0; bh < c1;) {
      const int64_t b = bh / Hq, g = (bh % Hq) / G, end = run_end(bh, c1, Hq, G), run = end - bh;
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, S, D, S, 1.0f, P + (bh - c0) * S * S, S, S * S, V + (b * Hkv + g) * SD, D, 0,
                                    0.0f, O + bh * SD, CUDA_R_16BF, D, SD, run));
      bh = end;
    }
  }
  return 0;
}
