// 7p_Ragged_Paged_Attention baseline (cuda). Estimate at full size (T=4096, 64 slots, Hq=64, Hkv=8, D=128, PS=16, PPS=256; 47
// decodes and 8 prefill chunks of ≤ 512 rows, kv_len ≈ U[q_len, 4096]): prefill GEMMs ≈ 0.3 TFLOP (causal bound per chunk)
// ≈ 0.5 ms at 650 TFLOP/s; prefill score traffic ≈ 6 GB (fp32 scores written and read, bf16 probabilities written and read,
// ≈ 0.75 GB per chunk) ≈ 1.7 ms at 3.5 TB/s; gathers ≈ 0.1 GB; decodes ≈ 0.1 ms; ≈ 150 launches and one host sync on the
// metadata ≈ 0.3 ms: ≈ 2.5-3 ms against XLA's 9.98 ms.
//
// What XLA emits for the JAX reference, whose per-sequence slices have static shapes there (q_len, kv_len known when the step
// is compiled): per sequence a gather fusion of its pages, dots and a masked softmax fusion. Here the metadata (kv_lens,
// cu_q_lens, num_seqs: 2·SLOTS + 2 ints) is copied to the host first (one stream synchronisation), then:
//   - output rows outside the active sequences' range [cu_q_lens[0], cu_q_lens[num_seqs]) are zeroed (cudaMemsetAsync);
//   - decode sequences (q_len = 1, one query at position kv_len - 1, so it sees keys t < kv_len): three direct kernels for all
//     of them at once, as 6p_Paged_Attention (scores with a warp per key position against the G = Hq/Hkv query heads of its kv
//     head, softmax in place in fp32, P·V from shared-memory tiles of gathered value rows), each block checking on the device
//     that its slot is an active decode;
//   - every other active sequence (a prefill chunk): one gather kernel copies its first kv_len keys and values (combined head
//     2g and 2g+1 of its pages) into contiguous (Hkv, kv_len, D) buffers, then per block of ≤ rc query rows (rc from a 1 GiB
//     budget for scores and probabilities; one block per chunk at full size): per kv head one strided-batched cuBLAS GEMM over
//     its G query heads (queries read in place, row stride Hq·D, shared keys at batch stride 0) for the fp32 scores
//     D^(-1/2)·q·kᵀ against the n keys the block's last row can see, a softmax kernel (fp32, a block per (head, row), causal
//     limit t ≤ P_r = kv_len - q_len + r; the reference's -0.7·FLT_MAX gives p = 0 exactly) writing bf16 probabilities (as JAX
//     rounds them before P·V), and per kv head a strided-batched GEMM P·V written straight into the output rows.
// Pages past kv_len are never read. Lengths are clamped for memory safety (kv_len to [1, L], rows to [0, T]); a kv_len below
// q_len (never drawn: kv_len ∈ [q_len, L]) is not emulated.
#include <opbench/cuda_blas.cuh>

#include <vector>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int kThreads = 256;                 // 8 warps; a multiple of 32 (block reductions)
constexpr int kWarps = kThreads / 32;
constexpr int kScoreTile = 128;               // key positions per block of the decode score kernel
constexpr int kMaxPerLane = 8;                // D ≤ 32·8 = 256 (one key row in the registers of a warp)
constexpr int kPvTile = 64;                   // key positions per shared-memory tile of the decode P·V kernel
constexpr uint64_t kRowBudget = 1ull << 30;   // bytes of prefill fp32 scores + bf16 probabilities per block of rows

struct Dims {
  int64_t T, Hq, D, PS, Hkv, PPS, SLOTS, L, G;
};

Dims dims_of(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kv = call->inputs[1];
  Dims d;
  d.T = q.shape[0];
  d.Hq = q.shape[1];
  d.D = q.shape[2];
  d.PS = kv.shape[1];
  d.Hkv = kv.shape[2] / 2;
  d.PPS = call->inputs[3].shape[1];
  d.SLOTS = call->inputs[2].shape[0];
  d.L = d.PS * d.PPS;
  d.G = d.Hq / d.Hkv;
  return d;
}

int64_t align_bytes(int64_t n) { return (n + 255) / 256 * 256; }
int64_t pitch_of(int64_t n) { return (n + 7) / 8 * 8; }  // row pitch (elements) of the prefill scores / probabilities

// Workspace plan (bytes): decode scores (SLOTS, Hq, L) fp32; gathered K and V (Hkv, L, D) bf16 each; prefill scores
// (Hq, rc, Lp) fp32 and probabilities (Hq, rc, Lp) bf16 for blocks of rc query rows, Lp = L rounded up to 8 (row pitches are
// multiples of 8 elements, so that every cuBLAS operand stays 16-byte aligned).
struct Plan {
  int64_t dec, kg, vg, sc, p, rc, total;
};

Plan plan_of(const Dims& d) {
  Plan p;
  const int64_t Lp = pitch_of(d.L);
  int64_t rc = int64_t(kRowBudget) / (d.Hq * Lp * int64_t(sizeof(float) + sizeof(ob_bf16)));
  p.rc = rc < 1 ? 1 : (rc > d.T ? d.T : rc);
  p.dec = 0;
  p.kg = p.dec + align_bytes(d.SLOTS * d.Hq * d.L * int64_t(sizeof(float)));
  p.vg = p.kg + align_bytes(d.Hkv * d.L * d.D * int64_t(sizeof(ob_bf16)));
  p.sc = p.vg + align_bytes(d.Hkv * d.L * d.D * int64_t(sizeof(ob_bf16)));
  p.p = p.sc + align_bytes(d.Hq * p.rc * Lp * int64_t(sizeof(float)));
  p.total = p.p + align_bytes(d.Hq * p.rc * Lp * int64_t(sizeof(ob_bf16)));
  return p;
}

// Two bf16 packed in a 32-bit word to floats (memcpy, not a pointer cast, between the types: no aliasing questions).
__device__ __forceinline__ float2 unpack2(unsigned w) {
  __nv_bfloat162 h;
  memcpy(&h, &w, sizeof h);
  return __bfloat1622float2(h);
}

__device__ __forceinline__ int clamp_len(int len, int L) { return len < 1 ? 1 : (len > L ? L : len); }

// Slot i as a decode: true when it is active (i < num_seqs) and owns exactly one query row, then its row (clamped to [0, T)).
__device__ __forceinline__ bool decode_slot(int i, const int32_t* cu_q_lens, const int32_t* num_seqs, int T, int* row) {
  if (i >= num_seqs[0]) return false;
  const int q0 = cu_q_lens[i];
  if (cu_q_lens[i + 1] - q0 != 1) return false;
  *row = q0 < 0 ? 0 : (q0 >= T ? T - 1 : q0);
  return true;
}

// Decode scores of slot i = blockIdx.z, kv head g = blockIdx.y, positions [t0, t0 + kScoreTile) ∩ [0, len): a warp per
// position, the key row (combined head 2g of its page slot) in registers, dotted with the G query heads of the group (shared
// memory, fp32). Scores into Sc (SLOTS, Hq, L).
__global__ void __launch_bounds__(kThreads) decode_scores(const ob_bf16* Q, const ob_bf16* KV, const int32_t* kv_lens,
                                                          const int32_t* pages, const int32_t* cu_q_lens, const int32_t* num_seqs,
                                                          float* Sc, int T, int Hq, int Hkv, int D, int PS, int PPS,
                                                          float scale) {
  extern __shared__ float qs[];
  const int G = Hq / Hkv, L = PS * PPS;
  const int i = blockIdx.z, g = blockIdx.y, t0 = blockIdx.x * kScoreTile;
  int qrow;
  if (!decode_slot(i, cu_q_lens, num_seqs, T, &qrow)) return;  // uniform over the block
  const int len = clamp_len(kv_lens[i], L);
  if (t0 >= len) return;
  const ob_bf16* q = Q + (int64_t(qrow) * Hq + int64_t(g) * G) * D;  // the group's G heads are adjacent: G·D elements
  for (int e = threadIdx.x; e < G * D; e += blockDim.x) qs[e] = ob_load(q, e);
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int t_end = t0 + kScoreTile < len ? t0 + kScoreTile : len;
  float* out = Sc + (int64_t(i) * Hq + int64_t(g) * G) * L;
  for (int t = t0 + warp; t < t_end; t += kWarps) {
    const int page = pages[int64_t(i) * PPS + t / PS];
    const ob_bf16* krow = KV + ((int64_t(page) * PS + t % PS) * 2 * Hkv + 2 * g) * D;
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

// Decode softmax of row (i, h) = blockIdx.x = i·Hq + h over its first len positions, fp32, in place (row cached in shared
// memory, L floats).
__global__ void __launch_bounds__(kThreads) decode_softmax(float* Sc, const int32_t* kv_lens, const int32_t* cu_q_lens,
                                                           const int32_t* num_seqs, int T, int Hq, int L) {
  extern __shared__ float srow[];
  const int64_t row = blockIdx.x;
  const int i = int(row / Hq);
  int qrow;
  if (!decode_slot(i, cu_q_lens, num_seqs, T, &qrow)) return;
  const int len = clamp_len(kv_lens[i], L);
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

// Decode out[row, g·G + r, :] = Σ_{t < len} p[i, g·G + r, t] · v_t for slot i = blockIdx.y, kv head g = blockIdx.x. Shared
// memory: a tile of value rows Vs (kPvTile × D), the tile's probabilities Ps (G × kPvTile), the accumulators Os (G × D), fp32.
__global__ void __launch_bounds__(kThreads) decode_pv(const float* Sc, const ob_bf16* KV, const int32_t* kv_lens,
                                                      const int32_t* pages, const int32_t* cu_q_lens, const int32_t* num_seqs,
                                                      ob_bf16* O, int T, int Hq, int Hkv, int D, int PS, int PPS) {
  extern __shared__ float sm[];
  const int G = Hq / Hkv, L = PS * PPS, GD = G * D;
  float* Vs = sm;
  float* Ps = Vs + kPvTile * D;
  float* Os = Ps + G * kPvTile;
  const int i = blockIdx.y, g = blockIdx.x;
  int qrow;
  if (!decode_slot(i, cu_q_lens, num_seqs, T, &qrow)) return;
  const int len = clamp_len(kv_lens[i], L);
  const float* prob = Sc + (int64_t(i) * Hq + int64_t(g) * G) * L;  // rows r = 0 .. G-1, stride L
  for (int o = threadIdx.x; o < GD; o += blockDim.x) Os[o] = 0.0f;
  const bool vec = (D & 7) == 0;
  for (int t0 = 0; t0 < len; t0 += kPvTile) {
    const int nt = len - t0 < kPvTile ? len - t0 : kPvTile;
    __syncthreads();  // the previous tile is consumed
    if (vec) {
      const int D8 = D >> 3;
      for (int e = threadIdx.x; e < nt * D8; e += blockDim.x) {
        const int tok = e / D8, d = (e - tok * D8) * 8, t = t0 + tok;
        const int page = pages[int64_t(i) * PPS + t / PS];
        const uint4 u = *reinterpret_cast<const uint4*>(KV + ((int64_t(page) * PS + t % PS) * 2 * Hkv + 2 * g + 1) * D + d);
        const float2 a = unpack2(u.x), b = unpack2(u.y), c = unpack2(u.z), e2 = unpack2(u.w);
        float4* dst = reinterpret_cast<float4*>(Vs + tok * D + d);
        dst[0] = make_float4(a.x, a.y, b.x, b.y);
        dst[1] = make_float4(c.x, c.y, e2.x, e2.y);
      }
    } else {
      for (int e = threadIdx.x; e < nt * D; e += blockDim.x) {
        const int tok = e / D, d = e - tok * D, t = t0 + tok;
        const int page = pages[int64_t(i) * PPS + t / PS];
        Vs[e] = ob_load(KV, ((int64_t(page) * PS + t % PS) * 2 * Hkv + 2 * g + 1) * D + d);
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
  ob_bf16* out = O + (int64_t(qrow) * Hq + int64_t(g) * G) * D;  // the group's G heads are adjacent: G·D elements
  for (int o = threadIdx.x; o < GD; o += blockDim.x) ob_store(out, o, Os[o]);
}

// Gather the first len key and value rows of sequence i into Kg, Vg (Hkv, len, D): Kg[g, t, :] = KV[page, t mod PS, 2g, :],
// Vg[g, t, :] = KV[page, t mod PS, 2g + 1, :], page = pages[i, t / PS]. Grid-stride over (g, t, 16-byte chunk) when D is a
// multiple of 8, else over single elements.
__global__ void __launch_bounds__(kThreads) gather_kv(const ob_bf16* KV, const int32_t* pages, int i, int len, ob_bf16* Kg,
                                                      ob_bf16* Vg, int Hkv, int D, int PS, int PPS) {
  const bool vec = (D & 7) == 0;
  const int W = vec ? D >> 3 : D;  // items per row
  const int64_t items = int64_t(Hkv) * len * W;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < items; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = e / W;  // g·len + t
    const int w = int(e - row * W), g = int(row / len), t = int(row - int64_t(g) * len);
    const int page = pages[int64_t(i) * PPS + t / PS];
    const int64_t src = ((int64_t(page) * PS + t % PS) * 2 * Hkv + 2 * g) * D;  // K row; V row at src + D
    const int64_t dst = row * D;
    if (vec) {
      reinterpret_cast<uint4*>(Kg + dst)[w] = reinterpret_cast<const uint4*>(KV + src)[w];
      reinterpret_cast<uint4*>(Vg + dst)[w] = reinterpret_cast<const uint4*>(KV + src + D)[w];
    } else {
      Kg[dst + w] = KV[src + w];
      Vg[dst + w] = KV[src + D + w];
    }
  }
}

// Prefill softmax for a block of `rows` query rows of one sequence: row x = blockIdx.x = h·rows + rl of Sc (Hq, rows, n) fp32
// (row pitch ld) sees keys t < visible = first + rl (first = kv_len - q_len + r0 + 1, the causal limit of the block's first
// row), clamped to [1, n]. Probabilities into P (Hq, rows, n) bf16 (pitch ld), 0 for visible ≤ t < n. The row is cached in
// shared memory (n floats).
__global__ void __launch_bounds__(kThreads) prefill_softmax(const float* Sc, ob_bf16* P, int rows, int n, int ld, int first) {
  extern __shared__ float srow[];
  const int64_t x = blockIdx.x;
  const int rl = int(x % rows);
  int visible = first + rl;
  visible = visible < 1 ? 1 : (visible > n ? n : visible);
  const float* s = Sc + x * ld;
  ob_bf16* p = P + x * ld;
  float m = -INFINITY;
  for (int t = threadIdx.x; t < visible; t += blockDim.x) {
    const float v = s[t];
    srow[t] = v;
    m = fmaxf(m, v);
  }
  m = ob_block_max(m);
  float sum = 0.0f;
  for (int t = threadIdx.x; t < visible; t += blockDim.x) {
    const float e = expf(srow[t] - m);
    srow[t] = e;
    sum += e;
  }
  sum = ob_block_sum(sum);
  const float inv = 1.0f / sum;
  for (int t = threadIdx.x; t < n; t += blockDim.x) ob_store(p, t, t < visible ? srow[t] * inv : 0.0f);
}

// Opt a kernel in to more than 48 KiB of dynamic shared memory when it needs it.
template <typename F>
cudaError_t allow_smem(F* kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) { return uint64_t(plan_of(dims_of(call)).total); }

extern "C" int32_t ob_run(const ob_call* call) {
  const Dims d = dims_of(call);
  const Plan pl = plan_of(d);
  if (d.D > 32 * kMaxPerLane) return 3;  // the decode score kernel holds one key row in the registers of a warp
  const ob_bf16* Q = ob_in_bf16(call, 0);
  const ob_bf16* KV = ob_in_bf16(call, 1);
  const int32_t* kv_lens = ob_in_i32(call, 2);
  const int32_t* pages = ob_in_i32(call, 3);
  const int32_t* cu_q_lens = ob_in_i32(call, 4);
  const int32_t* num_seqs = ob_in_i32(call, 5);
  ob_bf16* O = ob_out_bf16(call, 0);
  char* ws = static_cast<char*>(call->workspace);
  float* dec = reinterpret_cast<float*>(ws + pl.dec);
  ob_bf16* Kg = reinterpret_cast<ob_bf16*>(ws + pl.kg);
  ob_bf16* Vg = reinterpret_cast<ob_bf16*>(ws + pl.vg);
  float* Sc = reinterpret_cast<float*>(ws + pl.sc);
  ob_bf16* P = reinterpret_cast<ob_bf16*>(ws + pl.p);
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t h = ob_blas(stream);
  const float scale = float(1.0 / sqrt(double(d.D)));
  const int64_t row = d.Hq * d.D;  // elements per token row of queries / out

  // The metadata on the host: the GEMM shapes depend on it.
  std::vector<int32_t> kv(size_t(d.SLOTS)), cu(size_t(d.SLOTS + 1));
  int32_t ns_host = 0;
  OB_CUDA_TRY(cudaMemcpyAsync(kv.data(), kv_lens, kv.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
  OB_CUDA_TRY(cudaMemcpyAsync(cu.data(), cu_q_lens, cu.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
  OB_CUDA_TRY(cudaMemcpyAsync(&ns_host, num_seqs, sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
  OB_CUDA_TRY(cudaStreamSynchronize(stream));
  const int64_t ns = clamp64(ns_host, 0, d.SLOTS);

  // Rows of no active sequence: zero.
  const int64_t first = clamp64(cu[0], 0, d.T), last = clamp64(cu[size_t(ns)], first, d.T);
  if (first > 0) OB_CUDA_TRY(cudaMemsetAsync(O, 0, size_t(first * row) * sizeof(ob_bf16), stream));
  if (last < d.T) OB_CUDA_TRY(cudaMemsetAsync(O + last * row, 0, size_t((d.T - last) * row) * sizeof(ob_bf16), stream));

  // Decodes, all at once.
  bool any_decode = false;
  for (int64_t i = 0; i < ns; ++i) any_decode |= cu[size_t(i + 1)] - cu[size_t(i)] == 1;
  if (any_decode) {
    const size_t score_smem = size_t(d.G * d.D) * sizeof(float);
    OB_CUDA_TRY(allow_smem(decode_scores, score_smem));
    decode_scores<<<dim3(unsigned(ob_cdiv(d.L, kScoreTile)), unsigned(d.Hkv), unsigned(d.SLOTS)), kThreads, score_smem, stream>>>(
        Q, KV, kv_lens, pages, cu_q_lens, num_seqs, dec, int(d.T), int(d.Hq), int(d.Hkv), int(d.D), int(d.PS), int(d.PPS), scale);
    OB_CUDA_TRY(cudaGetLastError());
    const size_t softmax_smem = size_t(d.L) * sizeof(float);
    OB_CUDA_TRY(allow_smem(decode_softmax, softmax_smem));
    decode_softmax<<<unsigned(d.SLOTS * d.Hq), kThreads, softmax_smem, stream>>>(dec, kv_lens, cu_q_lens, num_seqs, int(d.T),
                                                                                  int(d.Hq), int(d.L));
    OB_CUDA_TRY(cudaGetLastError());
    const size_t pv_smem = size_t(kPvTile * d.D + d.G * kPvTile + d.G * d.D) * sizeof(float);
    OB_CUDA_TRY(allow_smem(decode_pv, pv_smem));
    decode_pv<<<dim3(unsigned(d.Hkv), unsigned(d.SLOTS)), kThreads, pv_smem, stream>>>(dec, KV, kv_lens, pages, cu_q_lens, num_seqs,
                                                                                       O, int(d.T), int(d.Hq), int(d.Hkv), int(d.D),
                                                                                       int(d.PS), int(d.PPS));
    OB_CUDA_TRY(cudaGetLastError());
  }

  // Prefill chunks, one sequence at a time.
  const size_t softmax_smem = size_t(d.L) * sizeof(float);
  OB_CUDA_TRY(allow_smem(prefill_softmax, softmax_smem));
  for (int64_t i = 0; i < ns; ++i) {
    const int64_t q0 = clamp64(cu[size_t(i)], 0, d.T), q1 = clamp64(cu[size_t(i + 1)], q0, d.T), lq = q1 - q0;
    if (cu[size_t(i + 1)] - cu[size_t(i)] < 2 || lq < 1) continue;  // decodes (done above) and empty sequences
    const int64_t lkv = clamp64(kv[size_t(i)], 1, d.L);
    const int64_t items = d.Hkv * lkv * ((d.D & 7) == 0 ? d.D / 8 : d.D);
    gather_kv<<<ob_grid_for(items, kThreads), kThreads, 0, stream>>>(KV, pages, int(i), int(lkv), Kg, Vg, int(d.Hkv), int(d.D),
                                                                     int(d.PS), int(d.PPS));
    OB_CUDA_TRY(cudaGetLastError());
    for (int64_t r0 = 0; r0 < lq; r0 += pl.rc) {
      const int64_t rows = lq - r0 < pl.rc ? lq - r0 : pl.rc;
      const int64_t n = clamp64(lkv - lq + r0 + rows, 1, lkv);  // keys the block's last row sees
      const int64_t ld = pitch_of(n), head = rows * ld;          // row pitch, elements per head of Sc and P
      const ob_bf16* Qb = Q + (q0 + r0) * row;
      for (int64_t g = 0; g < d.Hkv; ++g)
        OB_CUBLAS_TRY(ob_gemm_batched(h, false, true, rows, n, d.D, scale, Qb + g * d.G * d.D, row, d.D, Kg + g * lkv * d.D, d.D, 0,
                                      0.0f, Sc + g * d.G * head, CUDA_R_32F, ld, head, d.G));
      prefill_softmax<<<unsigned(d.Hq * rows), kThreads, size_t(n) * sizeof(float), stream>>>(Sc, P, int(rows), int(n), int(ld),
                                                                                             int(lkv - lq + r0 + 1));
      OB_CUDA_TRY(cudaGetLastError());
      for (int64_t g = 0; g < d.Hkv; ++g)
        OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, rows, d.D, n, 1.0f, P + g * d.G * head, ld, head, Vg + g * lkv * d.D, d.D, 0,
                                      0.0f, O + (q0 + r0) * row + g * d.G * d.D, CUDA_R_16BF, row, d.D, d.G));
    }
  }
  return 0;
}
