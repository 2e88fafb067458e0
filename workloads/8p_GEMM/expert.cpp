// 8p_GEMM expert: a packed, cache-blocked SGEMM (BLIS/GotoBLAS style), no libraries.
//
//  - Micro-kernel: 6xNR register tile, inline assembly, k loop unrolled 8x, A prefetched. At
//    x86-64-v4 (AVX-512) NR = 32: 12 zmm accumulators, 2 zmm B loads + 6 broadcasts per k step;
//    at x86-64-v3 NR = 16 with ymm. Row remainders (< 6 rows) use a kernel that computes only the
//    valid rows, column remainders (< NR) a scratch tile.
//  - Blocking: NC columns of B packed into KC-deep NR-column slivers (L2/L3), MC rows of A packed
//    into KC-deep 6-row slivers (L2); the inner loops reuse one B sliver (L1 at KC <= 128, L2 at the
//    default KC = 1024) across the whole A block.
//  - A is packed with an 8x8 register transpose (6 rows x 8 k at a time), B with straight copies.
//  - Threads: the columns of C are split into one contiguous, NR-aligned range per thread; each
//    thread runs the whole blocked GEMM on its range with its own packed buffers, so there is no
//    barrier at all (A is packed once per NC block per thread; packing is ~3% of the time).
//  - fp32 accumulation, as in the workload description. Any M, K, N (K = 0 gives C = 0).
#include <opbench/kernel.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "expert.cpp needs AVX2 and FMA"
#endif

// The vector of the micro-kernel: zmm where the build allows AVX-512 (x86-64-v4), else ymm.
#if defined(__AVX512F__)
#define OB_V "zmm"
#define OB_VB "64"  // bytes per vector
typedef __m512 vec;
static inline vec vzero() { return _mm512_setzero_ps(); }
static inline vec vbroadcast(const float* p) { return _mm512_set1_ps(*p); }
static inline vec vload(const float* p) { return _mm512_load_ps(p); }
static inline vec vloadu(const float* p) { return _mm512_loadu_ps(p); }
static inline void vstore(float* p, vec v) { _mm512_store_ps(p, v); }
static inline void vstoreu(float* p, vec v) { _mm512_storeu_ps(p, v); }
static inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline vec vadd(vec a, vec b) { return _mm512_add_ps(a, b); }
#else
#define OB_V "ymm"
#define OB_VB "32"
typedef __m256 vec;
static inline vec vzero() { return _mm256_setzero_ps(); }
static inline vec vbroadcast(const float* p) { return _mm256_broadcast_ss(p); }
static inline vec vload(const float* p) { return _mm256_load_ps(p); }
static inline vec vloadu(const float* p) { return _mm256_loadu_ps(p); }
static inline void vstore(float* p, vec v) { _mm256_store_ps(p, v); }
static inline void vstoreu(float* p, vec v) { _mm256_storeu_ps(p, v); }
static inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline vec vadd(vec a, vec b) { return _mm256_add_ps(a, b); }
#endif

// opbench:param KC 256 384 512 1024
// Most depth of a packed panel (K block; K is cut into equal panels of at most KC, multiples of
// 8). Deeper panels mean fewer read-modify-write passes over C (none at all when KC >= K, as at the
// cpu size); the KC x NR B sliver (128 KiB at 1024 x 32) then streams from L2, which the
// micro-kernel absorbs at full speed (Zen 4, one core, C and A in cache: 117 GFLOP/s at KC = 256 and
// 512 alike).
#ifndef KC
#define KC 1024
#endif
// opbench:param MC 24 48 96 144 192 288
// Rows of A packed per block (multiple of 6): an MC x KC block lives in L2 beside the B sliver.
// Measured on Zen 4 at the cpu size (scratch driver, 2 threads, 60 calls each in turn with
// dnnl_sgemm): KC = 1024 with MC = 12-36 0.98-1.03x dnnl's time, KC = 512 MC = 96 0.97-0.98x,
// KC = 256 MC = 144 0.90-0.95x.
#ifndef MC
#define MC 24
#endif
// opbench:param NC 448 896 1792
// Columns of B packed per panel (multiple of NR): the KC x NC panel lives in L2/L3. Each thread
// owns N/threads columns (1792 at the cpu size); a smaller NC repacks A once per panel.
#ifndef NC
#define NC 896
#endif

namespace {

constexpr int64_t MR = 6;
constexpr int64_t VW = int64_t(sizeof(vec) / sizeof(float));  // floats per vector: 16 (zmm) or 8 (ymm)
constexpr int64_t NR = 2 * VW;                                 // columns of the register tile
constexpr int64_t kKC = KC;
constexpr int64_t kMC = (MC + MR - 1) / MR * MR;
constexpr int64_t kNC = (NC + NR - 1) / NR * NR;
constexpr int64_t kAlign = 64;
static_assert(kKC > 0 && kMC > 0 && kNC > 0, "block sizes must be positive");

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Per-thread scratch (floats): packed A block (+ slack for the overlapping 8-wide stores of the
// transpose packer) and one packed B panel.
constexpr int64_t a_block_floats() { return kMC * kKC + 64; }
int64_t b_panel_floats(int64_t n) { return kKC * round_up(std::min(n, kNC), NR); }
int64_t thread_floats(int64_t n) { return round_up(a_block_floats() + b_panel_floats(n), 16); }

// One k step of the 6xNR tile in assembly: 2 aligned B loads, 6 broadcasts of A, 12 FMAs into
// v0..v11 (row r in v(2r), v(2r+1)). `o` is the step's offset inside an unrolled block.
#define OB_STEP(o)                                        \
  "vmovaps 2*" OB_VB "*" #o "(%[b]), %%" OB_V "12\n\t"      \
  "vmovaps 2*" OB_VB "*" #o "+" OB_VB "(%[b]), %%" OB_V "13\n\t" \
  "vbroadcastss 24*" #o "+0(%[a]), %%" OB_V "14\n\t"           \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "0\n\t"              \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "1\n\t"              \
  "vbroadcastss 24*" #o "+4(%[a]), %%" OB_V "15\n\t"           \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "2\n\t"              \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "3\n\t"              \
  "vbroadcastss 24*" #o "+8(%[a]), %%" OB_V "14\n\t"           \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "4\n\t"              \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "5\n\t"              \
  "vbroadcastss 24*" #o "+12(%[a]), %%" OB_V "15\n\t"          \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "6\n\t"              \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "7\n\t"              \
  "vbroadcastss 24*" #o "+16(%[a]), %%" OB_V "14\n\t"          \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "8\n\t"              \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "9\n\t"              \
  "vbroadcastss 24*" #o "+20(%[a]), %%" OB_V "15\n\t"          \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "10\n\t"             \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "11\n\t"

// c[0:6, 0:NR] (+)= a(6 x kc, k-major) * b(kc x NR, k-major, vector-aligned). `accumulate` is
// false on the first K panel, so the (NaN-poisoned) output is never read before it is written.
// The k loop is unrolled 8x; the A stream is prefetched 512 bytes ahead (3 lines per 8 steps).
__attribute__((noinline)) void micro_kernel_full(int64_t kc, const float* a, const float* b, float* c,
                                                 int64_t ldc, bool accumulate) {
  // Every cache line of the C tile (a zmm row of NR = 32 floats spans two): a tile line still in L3 or
  // DRAM when the epilogue reads or writes it stalls the whole kernel (measured 4-7% of the GEMM on Zen 4).
  for (int r = 0; r < MR; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + NR - 1), _MM_HINT_T0);
  }
  int64_t k8 = kc >> 3, k1 = kc & 7;
  const int64_t ldcb = ldc * int64_t(sizeof(float)), ldc3 = 3 * ldcb;
  float* c4 = c + 4 * ldc;
  const int64_t acc = accumulate ? 1 : 0;
  asm volatile(
      "vxorps %%" OB_V "0, %%" OB_V "0, %%" OB_V "0\n\t"
      "vxorps %%" OB_V "1, %%" OB_V "1, %%" OB_V "1\n\t"
      "vxorps %%" OB_V "2, %%" OB_V "2, %%" OB_V "2\n\t"
      "vxorps %%" OB_V "3, %%" OB_V "3, %%" OB_V "3\n\t"
      "vxorps %%" OB_V "4, %%" OB_V "4, %%" OB_V "4\n\t"
      "vxorps %%" OB_V "5, %%" OB_V "5, %%" OB_V "5\n\t"
      "vxorps %%" OB_V "6, %%" OB_V "6, %%" OB_V "6\n\t"
      "vxorps %%" OB_V "7, %%" OB_V "7, %%" OB_V "7\n\t"
      "vxorps %%" OB_V "8, %%" OB_V "8, %%" OB_V "8\n\t"
      "vxorps %%" OB_V "9, %%" OB_V "9, %%" OB_V "9\n\t"
      "vxorps %%" OB_V "10, %%" OB_V "10, %%" OB_V "10\n\t"
      "vxorps %%" OB_V "11, %%" OB_V "11, %%" OB_V "11\n\t"
      "test %[k8], %[k8]\n\t"
      "jz 2f\n\t"
      ".p2align 5\n\t"
      "1:\n\t"
      "prefetcht0 512(%[a])\n\t"
      "prefetcht0 576(%[a])\n\t"
      "prefetcht0 640(%[a])\n\t"
      OB_STEP(0) OB_STEP(1) OB_STEP(2) OB_STEP(3) OB_STEP(4) OB_STEP(5) OB_STEP(6) OB_STEP(7)
      "add $192, %[a]\n\t"
      "add $16*" OB_VB ", %[b]\n\t"
      "dec %[k8]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      "test %[k1], %[k1]\n\t"
      "jz 4f\n\t"
      "3:\n\t"
      OB_STEP(0)
      "add $24, %[a]\n\t"
      "add $2*" OB_VB ", %[b]\n\t"
      "dec %[k1]\n\t"
      "jnz 3b\n\t"
      "4:\n\t"
      "test %[acc], %[acc]\n\t"
      "jz 5f\n\t"
      "vaddps (%[c]), %%" OB_V "0, %%" OB_V "0\n\t"
      "vaddps " OB_VB "(%[c]), %%" OB_V "1, %%" OB_V "1\n\t"
      "vaddps (%[c],%[ldc],1), %%" OB_V "2, %%" OB_V "2\n\t"
      "vaddps " OB_VB "(%[c],%[ldc],1), %%" OB_V "3, %%" OB_V "3\n\t"
      "vaddps (%[c],%[ldc],2), %%" OB_V "4, %%" OB_V "4\n\t"
      "vaddps " OB_VB "(%[c],%[ldc],2), %%" OB_V "5, %%" OB_V "5\n\t"
      "vaddps (%[c],%[ldc3],1), %%" OB_V "6, %%" OB_V "6\n\t"
      "vaddps " OB_VB "(%[c],%[ldc3],1), %%" OB_V "7, %%" OB_V "7\n\t"
      "vaddps (%[c4]), %%" OB_V "8, %%" OB_V "8\n\t"
      "vaddps " OB_VB "(%[c4]), %%" OB_V "9, %%" OB_V "9\n\t"
      "vaddps (%[c4],%[ldc],1), %%" OB_V "10, %%" OB_V "10\n\t"
      "vaddps " OB_VB "(%[c4],%[ldc],1), %%" OB_V "11, %%" OB_V "11\n\t"
      "5:\n\t"
      "vmovups %%" OB_V "0, (%[c])\n\t"
      "vmovups %%" OB_V "1, " OB_VB "(%[c])\n\t"
      "vmovups %%" OB_V "2, (%[c],%[ldc],1)\n\t"
      "vmovups %%" OB_V "3, " OB_VB "(%[c],%[ldc],1)\n\t"
      "vmovups %%" OB_V "4, (%[c],%[ldc],2)\n\t"
      "vmovups %%" OB_V "5, " OB_VB "(%[c],%[ldc],2)\n\t"
      "vmovups %%" OB_V "6, (%[c],%[ldc3],1)\n\t"
      "vmovups %%" OB_V "7, " OB_VB "(%[c],%[ldc3],1)\n\t"
      "vmovups %%" OB_V "8, (%[c4])\n\t"
      "vmovups %%" OB_V "9, " OB_VB "(%[c4])\n\t"
      "vmovups %%" OB_V "10, (%[c4],%[ldc],1)\n\t"
      "vmovups %%" OB_V "11, " OB_VB "(%[c4],%[ldc],1)\n\t"
      "vzeroupper\n\t"
      : [a] "+r"(a), [b] "+r"(b), [k8] "+r"(k8), [k1] "+r"(k1)
      : [c] "r"(c), [c4] "r"(c4), [ldc] "r"(ldcb), [ldc3] "r"(ldc3), [acc] "r"(acc)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");
}
#undef OB_STEP

// A tile of R < 6 rows and all NR columns (the last sliver of a block whose rows are not a multiple
// of 6): only the R valid rows are computed and written.
template <int R>
__attribute__((noinline)) void micro_kernel_rows(int64_t kc, const float* __restrict a, const float* __restrict b,
                                                 float* __restrict c, int64_t ldc, bool accumulate) {
  static_assert(R >= 1 && R <= 5, "1 to 5 rows");
  vec l0 = vzero(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0, l4 = l0, h4 = l0;
#define OB_ROW(r, lo, hi)                                         \
  if constexpr (R > r) {                                          \
    const vec ak = vbroadcast(a + k * MR + r);                    \
    lo = vfma(ak, b0, lo);                                        \
    hi = vfma(ak, b1, hi);                                        \
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const vec b0 = vload(b + k * NR), b1 = vload(b + k * NR + VW);
    OB_ROW(0, l0, h0) OB_ROW(1, l1, h1) OB_ROW(2, l2, h2) OB_ROW(3, l3, h3) OB_ROW(4, l4, h4)
  }
#undef OB_ROW
#define OB_OUT(r, lo, hi)                                                       \
  if constexpr (R > r) {                                                        \
    float* cr = c + r * ldc;                                                    \
    if (accumulate) {                                                           \
      lo = vadd(lo, vloadu(cr));                                                \
      hi = vadd(hi, vloadu(cr + VW));                                           \
    }                                                                           \
    vstoreu(cr, lo);                                                            \
    vstoreu(cr + VW, hi);                                                       \
  }
  OB_OUT(0, l0, h0) OB_OUT(1, l1, h1) OB_OUT(2, l2, h2) OB_OUT(3, l3, h3) OB_OUT(4, l4, h4)
#undef OB_OUT
}

// Partial tile: rows x cols valid; computed into a scratch tile and copied out.
__attribute__((noinline)) void micro_kernel_edge(int64_t kc, const float* a, const float* b, float* c,
                                                 int64_t ldc, bool accumulate, int64_t rows, int64_t cols) {
  alignas(64) float edge[MR * NR];
  micro_kernel_full(kc, a, b, edge, NR, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q)
      c[r * ldc + q] = accumulate ? c[r * ldc + q] + edge[r * NR + q] : edge[r * NR + q];
}

// 8x8 transpose of r0..r7 (in place).
inline void transpose8(__m256& r0, __m256& r1, __m256& r2, __m256& r3, __m256& r4, __m256& r5, __m256& r6,
                       __m256& r7) {
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r0 = _mm256_permute2f128_ps(s0, s4, 0x20); r1 = _mm256_permute2f128_ps(s1, s5, 0x20);
  r2 = _mm256_permute2f128_ps(s2, s6, 0x20); r3 = _mm256_permute2f128_ps(s3, s7, 0x20);
  r4 = _mm256_permute2f128_ps(s0, s4, 0x31); r5 = _mm256_permute2f128_ps(s1, s5, 0x31);
  r6 = _mm256_permute2f128_ps(s2, s6, 0x31); r7 = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Pack rows [0, mc) x k [0, kc) of A (leading dim lda) into 6-row slivers (k-major, zero rows pad
// the last sliver). Full slivers use 8-wide loads and a transpose; the 8-wide stores overlap by two
// floats (written in increasing order), so `out` needs 2 floats of slack at the end.
void pack_a(int64_t mc, int64_t kc, const float* __restrict A, int64_t lda, float* __restrict out) {
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int64_t rows = std::min(MR, mc - i0);
    const float* src = A + i0 * lda;
    int64_t k = 0;
    if (rows == MR) {
      const __m256 z = _mm256_setzero_ps();
      for (; k + 8 <= kc; k += 8) {
        __m256 r0 = _mm256_loadu_ps(src + 0 * lda + k), r1 = _mm256_loadu_ps(src + 1 * lda + k);
        __m256 r2 = _mm256_loadu_ps(src + 2 * lda + k), r3 = _mm256_loadu_ps(src + 3 * lda + k);
        __m256 r4 = _mm256_loadu_ps(src + 4 * lda + k), r5 = _mm256_loadu_ps(src + 5 * lda + k);
        __m256 r6 = z, r7 = z;
        transpose8(r0, r1, r2, r3, r4, r5, r6, r7);
        float* d = out + k * MR;
        _mm256_storeu_ps(d + 0 * MR, r0); _mm256_storeu_ps(d + 1 * MR, r1);
        _mm256_storeu_ps(d + 2 * MR, r2); _mm256_storeu_ps(d + 3 * MR, r3);
        _mm256_storeu_ps(d + 4 * MR, r4); _mm256_storeu_ps(d + 5 * MR, r5);
        _mm256_storeu_ps(d + 6 * MR, r6); _mm256_storeu_ps(d + 7 * MR, r7);
      }
    }
    for (; k < kc; ++k) {
      for (int64_t r = 0; r < rows; ++r) out[k * MR + r] = src[r * lda + k];
      for (int64_t r = rows; r < MR; ++r) out[k * MR + r] = 0.0f;
    }
    out += MR * kc;
  }
}

// Pack rows [0, kc) x columns [0, nc) of B (leading dim ldb) into NR-column slivers (k-major, zero
// columns pad the last sliver). Row-major walk: each source row is read contiguously.
void pack_b(int64_t kc, int64_t nc, const float* __restrict B, int64_t ldb, float* __restrict out) {
  const int64_t full = nc / NR, rem = nc - full * NR;
  for (int64_t k = 0; k < kc; ++k) {
    const float* src = B + k * ldb;
    float* dst = out + k * NR;
    for (int64_t s = 0; s < full; ++s) {
      vstore(dst + s * NR * kc, vloadu(src + s * NR));
      vstore(dst + s * NR * kc + VW, vloadu(src + s * NR + VW));
    }
    if (rem) {
      float* d = dst + full * NR * kc;
      for (int64_t j = 0; j < rem; ++j) d[j] = src[full * NR + j];
      for (int64_t j = rem; j < NR; ++j) d[j] = 0.0f;
    }
  }
}

// One GEMM job: C[0:m, 0:n] = A[0:m, 0:K] * B[0:K, 0:n].
struct Job {
  int64_t m = 0, n = 0, K = 0;
  const float* A = nullptr;
  int64_t lda = 0;
  const float* B = nullptr;
  int64_t ldb = 0;
  float* C = nullptr;
  int64_t ldc = 0;
  int64_t mc_step() const {  // even MC blocks, so the last one is not a sliver
    const int64_t m_blocks = (m + kMC - 1) / kMC;
    return std::min(kMC, round_up((m + m_blocks - 1) / m_blocks, MR));
  }
  int64_t kc_step() const {  // even KC panels (a multiple of 8), so the last one is not thin
    const int64_t k_blocks = (K + kKC - 1) / kKC;
    return std::min(kKC, round_up((K + k_blocks - 1) / k_blocks, 8));
  }
};

// Single-threaded blocked GEMM of `job`.
void gemm_st(const Job& job, float* a_pack, float* b_pack) {
  const int64_t m = job.m, n = job.n, K = job.K, lda = job.lda, ldb = job.ldb, ldc = job.ldc;
  const float* A = job.A;
  const float* B = job.B;
  float* C = job.C;
  const int64_t mc_step = job.mc_step();
  const int64_t kc_step = job.kc_step();
  for (int64_t jc = 0; jc < n; jc += kNC) {
    const int64_t nc = std::min(kNC, n - jc);
    const int64_t n_slivers = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < K; pc += kc_step) {
      const int64_t kc = std::min(kc_step, K - pc);
      const bool accumulate = pc > 0;
      pack_b(kc, nc, B + pc * ldb + jc, ldb, b_pack);
      for (int64_t ic = 0; ic < m; ic += mc_step) {
        const int64_t mc = std::min(mc_step, m - ic);
        pack_a(mc, kc, A + ic * lda + pc, lda, a_pack);
        for (int64_t s = 0; s < n_slivers; ++s) {
          const int64_t j = jc + s * NR;
          const int64_t cols = std::min(NR, n - j);
          const float* bp = b_pack + s * NR * kc;
          for (int64_t i0 = 0; i0 < mc; i0 += MR) {
            const int64_t rows = std::min(MR, mc - i0);
            const float* ap = a_pack + i0 * kc;
            float* c = C + (ic + i0) * ldc + j;
            if (cols == NR) {
              switch (rows) {
                case 6: micro_kernel_full(kc, ap, bp, c, ldc, accumulate); break;
                case 5: micro_kernel_rows<5>(kc, ap, bp, c, ldc, accumulate); break;
                case 4: micro_kernel_rows<4>(kc, ap, bp, c, ldc, accumulate); break;
                case 3: micro_kernel_rows<3>(kc, ap, bp, c, ldc, accumulate); break;
                case 2: micro_kernel_rows<2>(kc, ap, bp, c, ldc, accumulate); break;
                default: micro_kernel_rows<1>(kc, ap, bp, c, ldc, accumulate); break;
              }
            } else {
              micro_kernel_edge(kc, ap, bp, c, ldc, accumulate, rows, cols);
            }
          }
        }
      }
    }
  }
}

float* align_up(void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((u + kAlign - 1) / kAlign * kAlign);
}

int32_t thread_count(const ob_call* call) { return std::max<int32_t>(1, call->num_threads); }

// Columns handled by each thread (NR-aligned, so every thread's slivers are full except the last).
int64_t cols_per_thread(int64_t N, int32_t threads) { return round_up((N + threads - 1) / threads, NR); }

uint64_t scratch_bytes(int64_t N, int32_t threads) {
  const int64_t per = thread_floats(std::min(N, cols_per_thread(N, threads)));
  return uint64_t(per) * threads * sizeof(float) + kAlign;
}

}  // namespace

OB_DEFINE_ABI_VERSION()

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return scratch_bytes(call->inputs[1].shape[1], thread_count(call));
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& a = call->inputs[0];
  const ob_tensor& b = call->inputs[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(call->outputs[0].data);
  if (M == 0 || N == 0) return 0;
  if (K == 0) {
    std::memset(C, 0, size_t(M * N) * sizeof(float));
    return 0;
  }
  const int32_t threads = thread_count(call);
  const int64_t per_cols = cols_per_thread(N, threads);
  const int64_t parts = (N + per_cols - 1) / per_cols;  // threads that get columns
  const uint64_t need = scratch_bytes(N, threads);
  void* heap = nullptr;
  void* scratch = call->workspace;
  if (scratch == nullptr || call->workspace_bytes < need) {
    heap = std::malloc(need);
    if (heap == nullptr) return 1;
    scratch = heap;
  }
  float* base = align_up(scratch);
  const int64_t per = thread_floats(std::min(N, per_cols));

#pragma omp parallel num_threads(int(parts))
  {
    const int64_t tid = omp_get_thread_num(), team = omp_get_num_threads();
    float* a_pack = base + tid * per;
    float* b_pack = a_pack + a_block_floats();  // 64-byte aligned: both sizes are multiples of 16
    for (int64_t t = tid; t < parts; t += team) {  // one part per thread unless the team is short
      const int64_t j0 = t * per_cols, j1 = std::min(N, j0 + per_cols);
      if (j0 >= j1) continue;
      Job job;
      job.m = M, job.n = j1 - j0, job.K = K, job.A = A, job.lda = K, job.B = B + j0, job.ldb = N;
      job.C = C + j0, job.ldc = N;
      gemm_st(job, a_pack, b_pack);
    }
  }
  std::free(heap);
  return 0;
}
