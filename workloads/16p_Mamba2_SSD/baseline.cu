// 16p_Mamba2_SSD baseline (cuda). Estimate at full size, causal row chunks of 256 (2.3e9 score
// elements of the 4.3e9 dense ones): 5.8e11 FLOP (the P·v GEMM twice, see below) / 650 TFLOP/s =
// 0.9 ms, but with D = 64 the work is bound by the 16 B per score element (fp32 scores written and
// read, two bf16 weight planes written and read: 37 GB) / 3.5 TB/s = 10.5 ms -> ~11-12 ms (XLA:
// 17.50 ms, dense S×S; not measured on a GPU yet).
//
// The composition XLA makes of the quadratic SSD form, batched over heads: a scan fusion for
// c = cumsum(ln(sigmoid(A_log) + 1e-8)), a batched GEMM for q·kᵀ with an fp32 result (JAXBench upcasts
// q and k to fp32; bf16 products accumulated in fp32 are the same products), one row fusion that
// applies L[i,j] = exp(c_i - c_j) (0 for j > i), sums the row (signed) and divides by max(|σ|, 1),
// and the product with v (fp32 accumulation, bf16 out). As in the cpu baseline (chunked over query
// rows), the rows are processed in chunks of 256: chunk [i0, i0+R) only needs the keys j < i0+R,
// which skips most of the zero upper triangle and bounds the score buffer (all 256 heads at full
// size). The row kernel keeps the row in registers, so the scores are read once. Score rows are
// padded to a multiple of 8 (ldc / lda of the GEMMs) for 16-byte loads.
//
// Precision (the workload warns that rows whose σ cancels amplify relative errors of L ≈ 1000x):
// the scan is done in double, then rebased per chunk, c_j - c_{i0}, and rounded to fp32 (exact near
// the chunk, where L matters; the cpu baseline does the same); σ is accumulated in double. XLA
// rounds P = G/max(|σ|,1) to bf16 before the product with v; in those rows that rounding alone puts
// 13-20 of 12936 test-size elements outside the bf16 tolerance (tests/cuda_emulation). So P is
// written as two bf16 planes, hi = bf16(P) and lo = bf16(P - hi), and P·v is hi·v + lo·v, two
// bf16 GEMMs accumulating in fp32: P to 2^-16 relative, at the cost of one more GEMM and 2 B per
// score element.
#include <opbench/cuda_blas.cuh>

#include <cmath>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int64_t kChunk = 256;                         // query rows per chunk
constexpr uint64_t kMaxScoreBytes = uint64_t(2) << 30;  // score + weight buffers of one head group
constexpr int kThreads = 256;
constexpr int kPer = 2;  // 8-element units per thread kept in registers: rows up to 256·2·8 = 4096
constexpr int kScanThreads = 256;

uint64_t align256(uint64_t n) { return (n + 255) / 256 * 256; }
int64_t round8(int64_t n) { return (n + 7) / 8 * 8; }

struct Plan {
  int64_t rows;   // rows per chunk
  int64_t ldn;    // padded row length for the longest chunk
  int64_t heads;  // heads per group
  uint64_t c_off, o_off, cf_off, sc_off, p_off, total;  // workspace byte offsets
};

Plan plan(int64_t BH, int64_t S, int64_t D) {
  Plan p;
  p.rows = S < kChunk ? S : kChunk;
  p.ldn = round8(S);
  const uint64_t per_head = uint64_t(p.rows) * uint64_t(p.ldn) * (sizeof(float) + 2 * sizeof(ob_bf16));
  int64_t cap = int64_t(kMaxScoreBytes / (per_head > 0 ? per_head : 1));
  if (cap < 1) cap = 1;
  if (cap > 65535) cap = 65535;  // heads are the row kernel's grid.y
  const int64_t groups = BH > 0 ? ob_cdiv(BH, cap) : 1;
  p.heads = BH > 0 ? ob_cdiv(BH, groups) : 1;
  p.c_off = 0;                                                                    // (BH, S) double
  p.o_off = p.c_off + align256(uint64_t(BH) * uint64_t(S) * sizeof(double));      // (BH, S, D) fp32
  p.cf_off = p.o_off + align256(uint64_t(BH) * uint64_t(S) * uint64_t(D) * sizeof(float));  // (heads, ldn) fp32
  p.sc_off = p.cf_off + align256(uint64_t(p.heads) * uint64_t(p.ldn) * sizeof(float));
  p.p_off = p.sc_off + align256(uint64_t(p.heads) * uint64_t(p.rows) * uint64_t(p.ldn) * sizeof(float));
  p.total = p.p_off + 2 * align256(uint64_t(p.heads) * uint64_t(p.rows) * uint64_t(p.ldn) * sizeof(ob_bf16));  // hi, lo
  return p;
}

// One block per head: c[t] = Σ_{t' <= t} ln(sigmoid(A_log[t']) + 1e-8), in double. Each thread scans
// a contiguous segment; the segment totals are scanned over the block in shared memory.
__global__ void __launch_bounds__(kScanThreads) scan_kernel(const float* __restrict__ A_log, double* __restrict__ c, int64_t S) {
  __shared__ double part[kScanThreads];
  const float* al = A_log + int64_t(blockIdx.x) * S;
  double* cr = c + int64_t(blockIdx.x) * S;
  const int64_t seg = ob_cdiv(S, kScanThreads);
  const int64_t t0 = int64_t(threadIdx.x) * seg, t1 = t0 + seg < S ? t0 + seg : S;
  double run = 0.0;
  for (int64_t t = t0; t < t1; ++t) {
    const double a = 1.0 / (1.0 + exp(-double(al[t])));
    run += log(a + 1e-8);
    cr[t] = run;
  }
  part[threadIdx.x] = run;
  __syncthreads();
  for (int off = 1; off < kScanThreads; off <<= 1) {  // inclusive Hillis-Steele scan of the totals
    const double add = threadIdx.x >= unsigned(off) ? part[threadIdx.x - off] : 0.0;
    __syncthreads();
    part[threadIdx.x] += add;
    __syncthreads();
  }
  const double base = threadIdx.x > 0 ? part[threadIdx.x - 1] : 0.0;
  for (int64_t t = t0; t < t1; ++t) cr[t] += base;
}

// cf[hh, j] = c[bh0 + hh, j] - c[bh0 + hh, i0] in fp32 for j < n.
__global__ void rebase_kernel(const double* __restrict__ c, float* __restrict__ cf, int64_t S, int64_t ldn, int64_t n, int64_t i0,
                              int64_t bh0) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, hh = blockIdx.y;
  if (j >= n) return;
  const double* cr = c + (bh0 + hh) * S;
  cf[hh * ldn + j] = float(cr[j] - cr[i0]);
}

union Vec8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

// G for 8 consecutive keys j0..j0+7 of query row i: s·exp(c_i - c_j) for j <= i, else 0. Entries
// with j > i (including the padding past n, in the scores and in cf) are never used.
__device__ __forceinline__ void decay8(const float* __restrict__ a, const float* __restrict__ cf, int64_t j0, int64_t i, float ci,
                                       float v[8]) {
  if (j0 > i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = 0.0f;
    return;
  }
  const float4 slo = reinterpret_cast<const float4*>(a + j0)[0];
  const float4 shi = reinterpret_cast<const float4*>(a + j0)[1];
  const float4 clo = reinterpret_cast<const float4*>(cf + j0)[0];
  const float4 chi = reinterpret_cast<const float4*>(cf + j0)[1];
  const float s[8] = {slo.x, slo.y, slo.z, slo.w, shi.x, shi.y, shi.z, shi.w};
  const float cj[8] = {clo.x, clo.y, clo.z, clo.w, chi.x, chi.y, chi.z, chi.w};
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = j0 + k <= i ? s[k] * expf(ci - cj[k]) : 0.0f;
}

// P = v·inv for 8 weights as two bf16 parts, hi = bf16(P) and lo = bf16(P - hi) (P - hi is exact in
// fp32): hi + lo is P to 2^-16 relative, and (hi·v) + (lo·v), both accumulated in fp32, is P·v.
__device__ __forceinline__ void pack8_split(const float v[8], float inv, uint4* hi, uint4* lo) {
  Vec8 h, l;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float a = v[2 * k] * inv, b = v[2 * k + 1] * inv;
    h.h[k] = __floats2bfloat162_rn(a, b);
    const float2 hf = __bfloat1622float2(h.h[k]);
    l.h[k] = __floats2bfloat162_rn(a - hf.x, b - hf.y);
  }
  *hi = h.u;
  *lo = l.u;
}

// Sum over the block (blockDim.x a multiple of 32) in double; every thread gets the result.
__device__ double block_sum_double(double v) {
  __shared__ double partial[32];
  __shared__ double total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    double w = lane < warps ? partial[lane] : 0.0;
    for (int off = 16; off > 0; off >>= 1) w += __shfl_xor_sync(0xffffffffu, w, off);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;
}

// One block per (query row r of the chunk, head hh of the group): scores a = Sc[hh, r, 0..ldn),
// query position i = i0 + r, rebased running sums cf[hh, 0..n). Writes P[hh, r, 0..ldn) as two bf16
// parts, Ph (hi) and Pl (lo).
__global__ void __launch_bounds__(kThreads) ssd_rows_kernel(const float* __restrict__ Sc, const float* __restrict__ cfs,
                                                            ob_bf16* __restrict__ Ph, ob_bf16* __restrict__ Pl, int64_t rows, int64_t ldn,
                                                            int64_t i0) {
  const int64_t r = blockIdx.x, hh = blockIdx.y;
  const int64_t i = i0 + r;
  const float* a = Sc + (hh * rows + r) * ldn;
  const float* cf = cfs + hh * ldn;
  const float ci = cf[i];
  uint4* ph = reinterpret_cast<uint4*>(Ph + (hh * rows + r) * ldn);
  uint4* pl = reinterpret_cast<uint4*>(Pl + (hh * rows + r) * ldn);
  const int64_t units = ldn / 8;

  float v[kPer][8];
  double sigma = 0.0;  // σ_i = Σ_j G[i,j] cancels (Σ|G|/|σ| up to ≈ 1000): accumulated in double
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t u = threadIdx.x + int64_t(k) * kThreads;
    if (u < units) {
      decay8(a, cf, u * 8, i, ci, v[k]);
#pragma unroll
      for (int e = 0; e < 8; ++e) sigma += double(v[k][e]);
    }
  }
  for (int64_t u = threadIdx.x + int64_t(kPer) * kThreads; u < units; u += kThreads) {
    float w[8];
    decay8(a, cf, u * 8, i, ci, w);
#pragma unroll
    for (int e = 0; e < 8; ++e) sigma += double(w[e]);
  }
  double mag = fabs(block_sum_double(sigma));
  if (mag < 1e-6) mag = 1.0;  // σ = 1 when |σ| < 1e-6 (divided by 1 either way)
  const float inv = float(1.0 / fmax(mag, 1.0));
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t u = threadIdx.x + int64_t(k) * kThreads;
    if (u < units) pack8_split(v[k], inv, ph + u, pl + u);
  }
  for (int64_t u = threadIdx.x + int64_t(kPer) * kThreads; u < units; u += kThreads) {
    float w[8];
    decay8(a, cf, u * 8, i, ci, w);
    pack8_split(w, inv, ph + u, pl + u);
  }
}

// out[i] = bf16(o[i]) over n elements.
__global__ void to_bf16_kernel(const float* __restrict__ o, ob_bf16* __restrict__ out, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) ob_store(out, i, o[i]);
}

}  // namespace

// The running sums (BH, S) double; per chunk of one head group: rebased sums, fp32 scores, bf16 weights.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  return plan(q.shape[0] * q.shape[1], q.shape[2], q.shape[3]).total;
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3], BH = B * H;
  const ob_bf16* Q = ob_in_bf16(call, 0);  // (B, H, S, D), plays C
  const ob_bf16* K = ob_in_bf16(call, 1);  // plays B
  const ob_bf16* V = ob_in_bf16(call, 2);  // plays x
  const float* A_log = static_cast<const float*>(call->inputs[3].data);  // (B, H, S), fp32
  ob_bf16* O = ob_out_bf16(call, 0);
  if (BH == 0 || S == 0 || D == 0) return 0;
  const Plan p = plan(BH, S, D);
  char* ws = static_cast<char*>(call->workspace);
  double* c = reinterpret_cast<double*>(ws + p.c_off);
  float* cf = reinterpret_cast<float*>(ws + p.cf_off);
  float* Sc = reinterpret_cast<float*>(ws + p.sc_off);
  float* O32 = reinterpret_cast<float*>(ws + p.o_off);
  ob_bf16* Ph = reinterpret_cast<ob_bf16*>(ws + p.p_off);
  ob_bf16* Pl = reinterpret_cast<ob_bf16*>(ws + p.p_off + align256(uint64_t(p.heads) * uint64_t(p.rows) * uint64_t(p.ldn) * sizeof(ob_bf16)));
  cudaStream_t s = ob_stream(call);
  cublasHandle_t h = ob_blas(s);

  scan_kernel<<<unsigned(BH), kScanThreads, 0, s>>>(A_log, c, S);
  OB_CUDA_TRY(cudaGetLastError());

  const int64_t SD = S * D;
  for (int64_t bh0 = 0; bh0 < BH; bh0 += p.heads) {
    const int64_t nh = BH - bh0 < p.heads ? BH - bh0 : p.heads;
    for (int64_t i0 = 0; i0 < S; i0 += p.rows) {
      const int64_t rows = S - i0 < p.rows ? S - i0 : p.rows;
      const int64_t n = i0 + rows, ldn = round8(n);  // keys j < n
      rebase_kernel<<<dim3(unsigned(ob_cdiv(n, 256)), unsigned(nh)), 256, 0, s>>>(c, cf, S, ldn, n, i0, bh0);
      OB_CUDA_TRY(cudaGetLastError());
      // Sc[hh] (rows × n) = q[bh, i0:i0+rows] · k[bh, 0:n]ᵀ, fp32.
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, true, rows, n, D, 1.0f, Q + bh0 * SD + i0 * D, D, SD, K + bh0 * SD, D, SD, 0.0f, Sc,
                                    CUDA_R_32F, ldn, rows * ldn, nh));
      ssd_rows_kernel<<<dim3(unsigned(rows), unsigned(nh)), kThreads, 0, s>>>(Sc, cf, Ph, Pl, rows, ldn, i0);
      OB_CUDA_TRY(cudaGetLastError());
      // o[bh, i0:i0+rows] = Ph[hh] · v[bh, 0:n] + Pl[hh] · v[bh, 0:n] (rows × n times n × D), fp32.
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, rows, D, n, 1.0f, Ph, ldn, rows * ldn, V + bh0 * SD, D, SD, 0.0f,
                                    O32 + bh0 * SD + i0 * D, CUDA_R_32F, D, SD, nh));
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, rows, D, n, 1.0f, Pl, ldn, rows * ldn, V + bh0 * SD, D, SD, 1.0f,
                                    O32 + bh0 * SD + i0 * D, CUDA_R_32F, D, SD, nh));
    }
  }
  // out = o rounded to bf16.
  to_bf16_kernel<<<ob_grid_for(BH * SD, 256), 256, 0, s>>>(O32, O, BH * SD);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
