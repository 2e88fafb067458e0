// 15p_RetNet_Retention baseline (cuda). Estimate at full size, causal row chunks of 256 (5.7e8 score
// elements of the 1.07e9 dense ones): 5.8e11 FLOP / 650 TFLOP/s = 0.9 ms + 12 B per score element
// (fp32 scores written and read, bf16 weights written and read: 6.8 GB) / 3.5 TB/s = 1.95 ms
// -> ~2.5-3 ms (XLA: 4.97 ms, dense S×S).
//
// The composition XLA makes of the parallel retention form, batched over heads: a batched GEMM for
// q·kᵀ with an fp32 result (JAXBench upcasts q and k to fp32; bf16 products accumulated in fp32 are
// the same products), one row fusion that applies the causal decay γ_h^(i-j), sums |A| per row,
// divides by max(Σ|A|, 1) and rounds to bf16, and a batched GEMM with v (fp32 accumulation, bf16
// out). As in the cpu baseline (chunked over query rows), the rows are processed in chunks of 256:
// chunk [i0, i0+R) only needs the keys j < i0+R, which skips most of the zero upper triangle and
// bounds the score buffer (hb heads × 256 × S fp32 + bf16; all 64 heads, 400 MB, at full size).
// The row kernel keeps the row's decayed scores in registers, so the scores are read once.
// Rows of the score buffers are padded to a multiple of 8 (ldc / lda of the GEMMs) for 16-byte loads.
#include <opbench/cuda_blas.cuh>

#include <cmath>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int64_t kChunk = 256;                         // query rows per chunk
constexpr uint64_t kMaxScoreBytes = uint64_t(2) << 30;  // score + weight buffers of one head group
constexpr int kThreads = 256;
constexpr int kPer = 2;  // 8-element units per thread kept in registers: rows up to 256·2·8 = 4096

int64_t round8(int64_t n) { return (n + 7) / 8 * 8; }

struct Plan {
  int64_t rows;   // rows per chunk
  int64_t ldn;    // padded row length for the longest chunk
  int64_t heads;  // heads per group
  uint64_t score_bytes;
};

Plan plan(int64_t BH, int64_t S) {
  Plan p;
  p.rows = S < kChunk ? S : kChunk;
  p.ldn = round8(S);
  const uint64_t per_head = uint64_t(p.rows) * uint64_t(p.ldn) * (sizeof(float) + sizeof(ob_bf16));
  int64_t cap = int64_t(kMaxScoreBytes / (per_head > 0 ? per_head : 1));
  if (cap < 1) cap = 1;
  if (cap > 65535) cap = 65535;  // heads are the row kernel's grid.y
  const int64_t groups = BH > 0 ? ob_cdiv(BH, cap) : 1;
  p.heads = BH > 0 ? ob_cdiv(BH, groups) : 1;
  p.score_bytes = (uint64_t(p.heads) * uint64_t(p.rows) * uint64_t(p.ldn) * sizeof(float) + 255) / 256 * 256;
  return p;
}

union Vec8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

// Decayed scores of 8 consecutive keys j0..j0+7 of query row i: A = s·γ^(i-j) for j <= i, else 0.
// Entries with j > i (including the padding past n) are never used, so garbage there is harmless.
__device__ __forceinline__ void decay8(const float* __restrict__ a, int64_t j0, int64_t i, float lg, float v[8]) {
  if (j0 > i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = 0.0f;
    return;
  }
  const float4 lo = reinterpret_cast<const float4*>(a + j0)[0];
  const float4 hi = reinterpret_cast<const float4*>(a + j0)[1];
  const float s[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int64_t j = j0 + k;
    v[k] = j <= i ? s[k] * expf(lg * float(i - j)) : 0.0f;
  }
}

__device__ __forceinline__ uint4 pack8(const float v[8], float inv) {
  Vec8 o;
#pragma unroll
  for (int k = 0; k < 4; ++k) o.h[k] = __floats2bfloat162_rn(v[2 * k] * inv, v[2 * k + 1] * inv);
  return o.u;
}

// One block per (query row r of the chunk, head hh of the group): scores a = Sc[hh, r, 0..ldn),
// query position i = i0 + r, head index h = (bh0 + hh) % H. Writes P[hh, r, 0..ldn) in bf16.
__global__ void __launch_bounds__(kThreads) retention_rows_kernel(const float* __restrict__ Sc, ob_bf16* __restrict__ P,
                                                                  int64_t rows, int64_t ldn, int64_t i0, int64_t bh0,
                                                                  int64_t H) {
  const int64_t r = blockIdx.x, hh = blockIdx.y;
  const int64_t i = i0 + r;
  const int64_t h = (bh0 + hh) % H;
  const float lg = float(log1p(-ldexp(1.0, int(-5 - h))));  // ln γ_h, γ_h = 1 - 2^(-5-h)
  const float* a = Sc + (hh * rows + r) * ldn;
  uint4* p = reinterpret_cast<uint4*>(P + (hh * rows + r) * ldn);
  const int64_t units = ldn / 8;

  float v[kPer][8];
  float abs_sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t u = threadIdx.x + int64_t(k) * kThreads;
    if (u < units) {
      decay8(a, u * 8, i, lg, v[k]);
#pragma unroll
      for (int e = 0; e < 8; ++e) abs_sum += fabsf(v[k][e]);
    }
  }
  for (int64_t u = threadIdx.x + int64_t(kPer) * kThreads; u < units; u += kThreads) {
    float w[8];
    decay8(a, u * 8, i, lg, w);
#pragma unroll
    for (int e = 0; e < 8; ++e) abs_sum += fabsf(w[e]);
  }
  const float inv = 1.0f / fmaxf(ob_block_sum(abs_sum), 1.0f);  // 1 / max(Σ_j |A[i,j]|, 1)
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t u = threadIdx.x + int64_t(k) * kThreads;
    if (u < units) p[u] = pack8(v[k], inv);
  }
  for (int64_t u = threadIdx.x + int64_t(kPer) * kThreads; u < units; u += kThreads) {
    float w[8];
    decay8(a, u * 8, i, lg, w);
    p[u] = pack8(w, inv);
  }
}

}  // namespace

// For one group of heads and one chunk of rows: fp32 scores, then the bf16 weights.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const Plan p = plan(q.shape[0] * q.shape[1], q.shape[2]);
  return p.score_bytes + uint64_t(p.heads) * uint64_t(p.rows) * uint64_t(p.ldn) * sizeof(ob_bf16);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3], BH = B * H;
  const ob_bf16* Q = ob_in_bf16(call, 0);  // (B, H, S, D)
  const ob_bf16* K = ob_in_bf16(call, 1);
  const ob_bf16* V = ob_in_bf16(call, 2);
  ob_bf16* O = ob_out_bf16(call, 0);
  if (BH == 0 || S == 0 || D == 0) return 0;
  const Plan p = plan(BH, S);
  float* Sc = static_cast<float*>(call->workspace);
  ob_bf16* P = reinterpret_cast<ob_bf16*>(static_cast<char*>(call->workspace) + p.score_bytes);
  cudaStream_t s = ob_stream(call);
  cublasHandle_t h = ob_blas(s);
  const int64_t SD = S * D;
  for (int64_t bh0 = 0; bh0 < BH; bh0 += p.heads) {
    const int64_t nh = BH - bh0 < p.heads ? BH - bh0 : p.heads;
    for (int64_t i0 = 0; i0 < S; i0 += p.rows) {
      const int64_t rows = S - i0 < p.rows ? S - i0 : p.rows;
      const int64_t n = i0 + rows, ldn = round8(n);  // keys j < n
      // Sc[hh] (rows × n) = q[bh, i0:i0+rows] · k[bh, 0:n]ᵀ, fp32.
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, true, rows, n, D, 1.0f, Q + bh0 * SD + i0 * D, D, SD, K + bh0 * SD, D, SD, 0.0f, Sc,
                                    CUDA_R_32F, ldn, rows * ldn, nh));
      retention_rows_kernel<<<dim3(unsigned(rows), unsigned(nh)), kThreads, 0, s>>>(Sc, P, rows, ldn, i0, bh0, H);
      OB_CUDA_TRY(cudaGetLastError());
      // out[bh, i0:i0+rows] = P[hh] (rows × n) · v[bh, 0:n], bf16.
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, rows, D, n, 1.0f, P, ldn, rows * ldn, V + bh0 * SD, D, SD, 0.0f,
                                    O + bh0 * SD + i0 * D, CUDA_R_16BF, D, SD, nh));
    }
  }
  return 0;
}
