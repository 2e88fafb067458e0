// 6p_Paged_Attention baseline (cuda). Estimate at full size (N=64, Hq=64, Hkv=8, D=128, PS=16, PPS=256): bandwidth-bound; the
// pages of the first kv_lens[s] tokens (≈ half the cache on average) are read once for K and once for V, ≈ 0.54 GB ≈ 0.15 ms
// at 3.5 TB/s, plus fp32 scores ≈ 0.07 GB written, read and rewritten by the softmax and read by P·V; the longest sequences
// (4096 tokens) bound the P·V kernel's tail: ≈ 0.4-0.6 ms against XLA's 3.14 ms.
//
// What XLA emits for decode-shaped paged attention (one query per sequence): gather + dot fusions rather than cuBLAS GEMMs with
// M = G = 8 rows. Three kernels, as three fusions:
//   1. scores: a block per (sequence s, kv head g, tile of 128 key positions), a warp per key position t < kv_lens[s]: the key
//      row is gathered through the page table (page_indices[s, t/PS], slot t mod PS) once and dotted with the G = Hq/Hkv query
//      heads that share it (query = queries[cu_q_lens[s]]), fp32, times D^(-1/2), into scores (N, Hq, L) in the workspace;
//   2. softmax: a block per (s, h) over t < kv_lens[s], fp32, in place (positions t ≥ kv_lens[s] are the reference's -1e30:
//      p = 0 exactly, never read or written);
//   3. P·V: a block per (s, g) looping over tiles of 64 positions t < kv_lens[s]: the gathered value rows and the G heads'
//      probabilities in shared memory, fp32 accumulators, the result rounded to bf16.
// Pages past kv_lens[s] are never read. kv_lens are taken clamped to [1, L] (the data law draws them in [1, L]).
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int kThreads = 256;                 // 8 warps; a multiple of 32 (block reductions)
constexpr int kWarps = kThreads / 32;
constexpr int kScoreTile = 128;               // key positions per block of the score kernel
constexpr int kMaxPerLane = 8;                // D ≤ 32·8 = 256 (one key row in the registers of a warp)
constexpr int kPvTile = 64;                   // key positions per shared-memory tile of the P·V kernel

// Two bf16 packed in a 32-bit word to floats (memcpy, not a pointer cast, between the types: no aliasing questions).
__device__ __forceinline__ float2 unpack2(unsigned w) {
  __nv_bfloat162 h;
  memcpy(&h, &w, sizeof h);
  return __bfloat1622float2(h);
}

__device__ __forceinline__ int clamp_len(int len, int L) { return len < 1 ? 1 : (len > L ? L : len); }

// Scores of sequence s = blockIdx.z, kv head g = blockIdx.y, positions [t0, t0 + kScoreTile) ∩ [0, len). Shared memory: the G
// query vectors of the group in fp32 (G·D floats).
__global__ void __launch_bounds__(kThreads) paged_scores(const ob_bf16* Q, const ob_bf16* Kp, const int32_t* kv_lens,
                                                         const int32_t* pages, const int32_t* cu_q_lens, float* Sc, int N, int Hq,
                                                         int Hkv, int D, int PS, int PPS, float scale) {
  extern __shared__ float qs[];
  const int G = Hq / Hkv, L = PS * PPS;
  const int s = blockIdx.z, g = blockIdx.y, t0 = blockIdx.x * kScoreTile;
  const int len = clamp_len(kv_lens[s], L);
  if (t0 >= len) return;  // uniform over the block
  int qrow = cu_q_lens[s];
  qrow = qrow < 0 ? 0 : (qrow >= N ? N - 1 : qrow);
  const ob_bf16* q = Q + (int64_t(qrow) * Hq + int64_t(g) * G) * D;  // the group's G heads are adjacent: G·D elements
  for (int e = threadIdx.x; e < G * D; e += blockDim.x) qs[e] = ob_load(q, e);
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int t_end = t0 + kScoreTile < len ? t0 + kScoreTile : len;
  float* out = Sc + (int64_t(s) * Hq + int64_t(g) * G) * L;
  for (int t = t0 + warp; t < t_end; t += kWarps) {
    const int page = pages[int64_t(s) * PPS + t / PS];
    const ob_bf16* krow = Kp + ((int64_t(page) * PS + t % PS) * Hkv + g) * D;
    float kv[kMaxPerLane];
#pragma unroll
    for (int u = 0; u < kMaxPerLane; ++u) {
      const int d = lane + 32 * u;
      kv[u] = d < D ? ob_load(krow, d) : 0.0f;
    }
    for (int r = 0; r < G; ++r) {
      float part = 0.0f;
#pragma unroll
      for (int u = 0; u < kMaxPerLane; ++u) {
        const int d = lane + 32 * u;
        if (d < D) part += qs[r * D + d] * kv[u];
      }
      part = ob_warp_sum(part);
      if (lane == 0) out[int64_t(r) * L + t] = part * scale;
    }
  }
}

// Softmax of row (s, h) = blockIdx.x = s·Hq + h over its first len positions, fp32, in place; the row is cached in shared
// memory (L floats).
__global__ void __launch_bounds__(kThreads) length_softmax(float* Sc, const int32_t* kv_lens, int Hq, int L) {
  extern __shared__ float srow[];
  const int64_t row = blockIdx.x;
  const int len = clamp_len(kv_lens[row / Hq], L);
  float* p = Sc + row * L;
  float m = -INFINITY;
  for (int t = threadIdx.x; t < len; t += blockDim.x) {
    const float v = p[t];
    srow[t] = v;
    m = fmaxf(m, v);
  }
  m = ob_block_max(m);
  float sum = 0.0f;
  for (int t = threadIdx.x; t < len; t += blockDim.x) {
    const float x = expf(srow[t] - m);
    srow[t] = x;
    sum += x;
  }
  sum = ob_block_sum(sum);
  const float inv = 1.0f / sum;
  for (int t = threadIdx.x; t < len; t += blockDim.x) p[t] = srow[t] * inv;
}

// out[s, g·G + r, :] = Σ_{t < len} p[s, g·G + r, t] · v_t for sequence s = blockIdx.y, kv head g = blockIdx.x. Shared memory:
// a tile of value rows Vs (kPvTile × D), the tile's probabilities Ps (G × kPvTile), the accumulators Os (G × D), fp32.
__global__ void __launch_bounds__(kThreads) paged_pv(const float* Sc, const ob_bf16* Vp, const int32_t* kv_lens,
                                                     const int32_t* pages, ob_bf16* O, int Hq, int Hkv, int D, int PS, int PPS) {
  extern __shared__ float sm[];
  const int G = Hq / Hkv, L = PS * PPS, GD = G * D;
  float* Vs = sm;
  float* Ps = Vs + kPvTile * D;
  float* Os = Ps + G * kPvTile;
  const int s = blockIdx.y, g = blockIdx.x;
  const int len = clamp_len(kv_lens[s], L);
  const float* prob = Sc + (int64_t(s) * Hq + int64_t(g) * G) * L;  // rows r = 0 .. G-1, stride L
  for (int o = threadIdx.x; o < GD; o += blockDim.x) Os[o] = 0.0f;
  const bool vec = (D & 7) == 0;
  for (int t0 = 0; t0 < len; t0 += kPvTile) {
    const int nt = len - t0 < kPvTile ? len - t0 : kPvTile;
    __syncthreads();  // the previous tile is consumed
    if (vec) {
      const int D8 = D >> 3;
      for (int e = threadIdx.x; e < nt * D8; e += blockDim.x) {
        const int tok = e / D8, d = (e - tok * D8) * 8, t = t0 + tok;
        const int page = pages[int64_t(s) * PPS + t / PS];
        const uint4 u = *reinterpret_cast<const uint4*>(Vp + ((int64_t(page) * PS + t % PS) * Hkv + g) * D + d);
        const float2 a = unpack2(u.x), b = unpack2(u.y), c = unpack2(u.z), e2 = unpack2(u.w);
        float4* dst = reinterpret_cast<float4*>(Vs + tok * D + d);
        dst[0] = make_float4(a.x, a.y, b.x, b.y);
        dst[1] = make_float4(c.x, c.y, e2.x, e2.y);
      }
    } else {
      for (int e = threadIdx.x; e < nt * D; e += blockDim.x) {
        const int tok = e / D, d = e - tok * D, t = t0 + tok;
        const int page = pages[int64_t(s) * PPS + t / PS];
        Vs[e] = ob_load(Vp, ((int64_t(page) * PS + t % PS) * Hkv + g) * D + d);
      }
    }
    for (int e = threadIdx.x; e < G * kPvTile; e += blockDim.x) {
      const int r = e / kPvTile, tok = e - r * kPvTile;
      Ps[e] = tok < nt ? prob[int64_t(r) * L + t0 + tok] : 0.0f;
    }
    __syncthreads();
    for (int o = threadIdx.x; o < GD; o += blockDim.x) {
      const int r = o / D, d = o - r * D;
      const float* pr = Ps + r * kPvTile;
      float a = 0.0f;
      for (int tok = 0; tok < nt; ++tok) a += pr[tok] * Vs[tok * D + d];
      Os[o] += a;  // each thread owns its outputs o
    }
  }
  ob_bf16* out = O + (int64_t(s) * Hq + int64_t(g) * G) * D;  // the group's G heads are adjacent: G·D elements
  for (int o = threadIdx.x; o < GD; o += blockDim.x) ob_store(out, o, Os[o]);
}

// Opt a kernel in to more than 48 KiB of dynamic shared memory when it needs it.
template <typename F>
cudaError_t allow_smem(F* kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

}  // namespace

// The fp32 scores / probabilities of every (sequence, query head) over L positions.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t L = call->inputs[1].shape[1] * call->inputs[4].shape[1];
  return uint64_t(q.shape[0] * q.shape[1] * L) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kp = call->inputs[1];
  const int64_t N = q.shape[0], Hq = q.shape[1], D = q.shape[2];
  const int64_t PS = kp.shape[1], Hkv = kp.shape[2], PPS = call->inputs[4].shape[1];
  const int64_t L = PS * PPS, G = Hq / Hkv;
  if (D > 32 * kMaxPerLane) return 3;  // the score kernel holds one key row in the registers of a warp
  const ob_bf16* Q = ob_in_bf16(call, 0);
  const ob_bf16* K = ob_in_bf16(call, 1);
  const ob_bf16* V = ob_in_bf16(call, 2);
  const int32_t* kv_lens = ob_in_i32(call, 3);
  const int32_t* pages = ob_in_i32(call, 4);
  const int32_t* cu_q_lens = ob_in_i32(call, 5);
  ob_bf16* O = ob_out_bf16(call, 0);
  float* Sc = static_cast<float*>(call->workspace);
  cudaStream_t stream = ob_stream(call);
  const float scale = float(1.0 / sqrt(double(D)));

  const size_t score_smem = size_t(G * D) * sizeof(float);
  OB_CUDA_TRY(allow_smem(paged_scores, score_smem));
  paged_scores<<<dim3(unsigned(ob_cdiv(L, kScoreTile)), unsigned(Hkv), unsigned(N)), kThreads, score_smem, stream>>>(
      Q, K, kv_lens, pages, cu_q_lens, Sc, int(N), int(Hq), int(Hkv), int(D), int(PS), int(PPS), scale);
  OB_CUDA_TRY(cudaGetLastError());

  const size_t softmax_smem = size_t(L) * sizeof(float);
  OB_CUDA_TRY(allow_smem(length_softmax, softmax_smem));
  length_softmax<<<unsigned(N * Hq), kThreads, softmax_smem, stream>>>(Sc, kv_lens, int(Hq), int(L));
  OB_CUDA_TRY(cudaGetLastError());

  const size_t pv_smem = size_t(kPvTile * D + G * kPvTile + G * D) * sizeof(float);
  OB_CUDA_TRY(allow_smem(paged_pv, pv_smem));
  paged_pv<<<dim3(unsigned(Hkv), unsigned(N)), kThreads, pv_smem, stream>>>(Sc, V, kv_lens, pages, O, int(Hq), int(Hkv), int(D),
                                                                           int(PS), int(PPS));
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
