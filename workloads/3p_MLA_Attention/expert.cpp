// 3p_MLA_Attention expert: DeepSeek-V3 multi-head latent attention (prefill, causal) with a hand-written
// packed AVX2/FMA GEMM and a causal flash attention; no libraries.
//
//  - Projections (~85% of the time at the cpu size): packed, cache-blocked SGEMM (BLIS/GotoBLAS style,
//    KC-deep panels, blocks evened out). v3: 6x16 micro-kernel in inline asm, 12 ymm accumulators,
//    one B sliver reused across an MC-row A block. v4: 8p's design, a 14x32 tile (28 zmm
//    accumulators) with one A sliver in L1 while a packed B panel streams from L2 (see gemm_cols). Each thread owns a contiguous 16-aligned range of output columns and runs the blocked GEMM on
//    it with private packing buffers, so a GEMM needs no barrier inside. Fusions: the two
//    down-projections share x, so [cq | latent | kr] = x·[Wqd | Wkvd] is one GEMM (B packed from both
//    weights); k_nope and v share the latent, so [k_nope | v] = latent·[Wku | Wvu] is one GEMM; q =
//    cq·Wqu runs on the same threads without a barrier in between.
//  - RoPE and the 1/sqrt(DN+DR) scale are applied while the attention packs its operands: the query
//    block is packed (6-row k-major slivers) with q_rope rotated and everything scaled; the rotated
//    shared rope key is computed once per token and packed with k_nope into 16-key slivers of
//    [k_nope ‖ rope(kr)] per (batch, head); v is copied per head into contiguous rows. The cos/sin
//    table comes from exact double sincos on a coarse grid times a small table (angle addition).
//  - Attention (~15%): flash style per (batch, head, block of BQ query rows): key chunks of BK up to the
//    diagonal only, score tiles above the diagonal skipped, online softmax with a vectorized exp,
//    O = alpha·O + P·V fused in the micro-kernel epilogue, P·V per 6-row tile only up to its last row.
//  - out = O·Wo with the same GEMM.
#include <opbench/kernel.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "expert.cpp needs AVX2 and FMA"
#endif

// The vector of the micro-kernels: zmm where the build allows AVX-512 (x86-64-v4), else ymm. Register
// tiles are 6 x NR with NR = 2 vectors (32 columns at v4, 16 at v3), in the GEMM and in attention.
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

// opbench:param KC 0 256 384 512
// GEMM: depth of a packed panel. 0: the level's default. v4: the 14-row A sliver (KC x 14 floats)
// fills ~60% of L1d, read at run time (48 KiB: 512, 32 KiB: 344). v3: 384 (a KC x 16 B sliver stays
// in L1 while the A block streams from L2).
#ifndef KC
#define KC 0
#endif
// opbench:param MC 0 96 144 192
// GEMM: rows of A packed per block. 0: the level's default. v4: 1036 (all 1024 tokens of the cpu
// size in one block, so each B panel is packed once); v3: 144 (an MC x KC block in L2).
#ifndef MC
#define MC 0
#endif
// opbench:param BQ 48 96 144
// Attention: query rows per block (multiple of 6); each K/V chunk is reused over BQ rows.
#ifndef BQ
#define BQ 96
#endif
// opbench:param BK 64 128 256
// Attention: keys per chunk (multiple of NR = 32 at v4, 16 at v3); the score block is BQ x BK.
#ifndef BK
#define BK 128
#endif

namespace {

constexpr int64_t MR = 6;
constexpr int64_t VW = int64_t(sizeof(vec) / sizeof(float));  // floats per vector: 16 (zmm) or 8 (ymm)
constexpr int64_t NR = 2 * VW;                                 // columns of a register tile
#if defined(__AVX512F__)
// The GEMM at v4 has its own register tile, taller than the attention's 6 rows (see gemm_cols).
constexpr int64_t GMR = 14;
constexpr int64_t kKC = KC > 0 ? KC : 512;  // most depth; the run-time choice (gemm_kc) is <= this
constexpr int64_t kMC = (MC > 0 ? MC + GMR - 1 : 1036) / GMR * GMR;
constexpr int64_t kNC = 448;  // columns of B packed per panel: a 512 x 448 panel is 0.9 MiB of L2
#else
constexpr int64_t kKC = KC > 0 ? KC : 384;
constexpr int64_t kMC = ((MC > 0 ? MC : 144) + MR - 1) / MR * MR;
constexpr int64_t kNC = 2048;  // most columns of B packed at once per thread
#endif
constexpr int64_t kBQ = (BQ + MR - 1) / MR * MR;
constexpr int64_t kBK = (BK + NR - 1) / NR * NR;
static_assert(kKC > 0 && kMC > 0 && kBQ > 0 && kBK > 0, "block sizes must be positive");

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// ---------------------------------------------------------------------------------------------------
// GEMM
// ---------------------------------------------------------------------------------------------------

// c[0:6, 0:NR] (+)= a(kc x 6, k-major) · b(kc x NR, k-major).
__attribute__((always_inline)) inline void micro_kernel(int64_t kc, const float* __restrict a,
                                                        const float* __restrict b, float* __restrict c,
                                                        int64_t ldc, bool accumulate) {
  vec acc[MR][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = vzero();
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const vec b0 = vload(b + k * NR), b1 = vload(b + k * NR + VW);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const vec ak = vbroadcast(a + k * MR + r);
      acc[r][0] = vfma(ak, b0, acc[r][0]);
      acc[r][1] = vfma(ak, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    if (accumulate) {
      acc[r][0] = vadd(acc[r][0], vloadu(c + r * ldc));
      acc[r][1] = vadd(acc[r][1], vloadu(c + r * ldc + VW));
    }
    vstoreu(c + r * ldc, acc[r][0]);
    vstoreu(c + r * ldc + VW, acc[r][1]);
  }
}

// c[0:6, 0:16] (+)= a(kc x 6, k-major) · b(kc x 16, k-major), in inline asm: GCC's register allocation
// of the intrinsic version folds B loads into the FMAs and spills, ~15% slower.
#define OB_UKR_STEP(o)                                                        \
  "vmovaps 2*" OB_VB "*" #o "(%[b]), %%" OB_V "12\n\t"                        \
  "vmovaps 2*" OB_VB "*" #o "+" OB_VB "(%[b]), %%" OB_V "13\n\t"              \
  "vbroadcastss " #o "*24(%[a]), %%" OB_V "14\n\t"                            \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "0\n\t"                   \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "1\n\t"                   \
  "vbroadcastss " #o "*24+4(%[a]), %%" OB_V "15\n\t"                          \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "2\n\t"                   \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "3\n\t"                   \
  "vbroadcastss " #o "*24+8(%[a]), %%" OB_V "14\n\t"                          \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "4\n\t"                   \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "5\n\t"                   \
  "vbroadcastss " #o "*24+12(%[a]), %%" OB_V "15\n\t"                         \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "6\n\t"                   \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "7\n\t"                   \
  "vbroadcastss " #o "*24+16(%[a]), %%" OB_V "14\n\t"                         \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "8\n\t"                   \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "9\n\t"                   \
  "vbroadcastss " #o "*24+20(%[a]), %%" OB_V "15\n\t"                         \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "10\n\t"                  \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "11\n\t"

__attribute__((noinline)) void micro_kernel_full(int64_t kc, const float* a, const float* b, float* c,
                                                 int64_t ldc, bool accumulate) {
  int64_t k4 = kc / 4, k1 = kc % 4;
  const int64_t ldcb = ldc * int64_t(sizeof(float));
  float* c3 = c + 3 * ldc;
  const int64_t acc = accumulate ? 1 : 0;
  __asm__ volatile(
      // Both cache lines of every C row (a zmm row of 32 floats spans two; at ymm the second is the first).
      "prefetcht0 (%[c])\n\t"
      "prefetcht0 (%[c], %[ldc], 1)\n\t"
      "prefetcht0 (%[c], %[ldc], 2)\n\t"
      "prefetcht0 (%[c3])\n\t"
      "prefetcht0 (%[c3], %[ldc], 1)\n\t"
      "prefetcht0 (%[c3], %[ldc], 2)\n\t"
      "prefetcht0 2*" OB_VB "-4(%[c])\n\t"
      "prefetcht0 2*" OB_VB "-4(%[c], %[ldc], 1)\n\t"
      "prefetcht0 2*" OB_VB "-4(%[c], %[ldc], 2)\n\t"
      "prefetcht0 2*" OB_VB "-4(%[c3])\n\t"
      "prefetcht0 2*" OB_VB "-4(%[c3], %[ldc], 1)\n\t"
      "prefetcht0 2*" OB_VB "-4(%[c3], %[ldc], 2)\n\t"
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
      "test %[k4], %[k4]\n\t"
      "jz 2f\n\t"
      ".p2align 5\n\t"
      "1:\n\t"
      "prefetcht0 384(%[a])\n\t"
      OB_UKR_STEP(0) OB_UKR_STEP(1) OB_UKR_STEP(2) OB_UKR_STEP(3)
      "add $96, %[a]\n\t"
      "add $8*" OB_VB ", %[b]\n\t"
      "dec %[k4]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      "test %[k1], %[k1]\n\t"
      "jz 4f\n\t"
      "3:\n\t"
      OB_UKR_STEP(0)
      "add $24, %[a]\n\t"
      "add $2*" OB_VB ", %[b]\n\t"
      "dec %[k1]\n\t"
      "jnz 3b\n\t"
      "4:\n\t"
      "test %[acc], %[acc]\n\t"
      "jz 5f\n\t"
      "vaddps (%[c]), %%" OB_V "0, %%" OB_V "0\n\t"
      "vaddps " OB_VB "(%[c]), %%" OB_V "1, %%" OB_V "1\n\t"
      "vaddps (%[c], %[ldc], 1), %%" OB_V "2, %%" OB_V "2\n\t"
      "vaddps " OB_VB "(%[c], %[ldc], 1), %%" OB_V "3, %%" OB_V "3\n\t"
      "vaddps (%[c], %[ldc], 2), %%" OB_V "4, %%" OB_V "4\n\t"
      "vaddps " OB_VB "(%[c], %[ldc], 2), %%" OB_V "5, %%" OB_V "5\n\t"
      "vaddps (%[c3]), %%" OB_V "6, %%" OB_V "6\n\t"
      "vaddps " OB_VB "(%[c3]), %%" OB_V "7, %%" OB_V "7\n\t"
      "vaddps (%[c3], %[ldc], 1), %%" OB_V "8, %%" OB_V "8\n\t"
      "vaddps " OB_VB "(%[c3], %[ldc], 1), %%" OB_V "9, %%" OB_V "9\n\t"
      "vaddps (%[c3], %[ldc], 2), %%" OB_V "10, %%" OB_V "10\n\t"
      "vaddps " OB_VB "(%[c3], %[ldc], 2), %%" OB_V "11, %%" OB_V "11\n\t"
      "5:\n\t"
      "vmovups %%" OB_V "0, (%[c])\n\t"
      "vmovups %%" OB_V "1, " OB_VB "(%[c])\n\t"
      "vmovups %%" OB_V "2, (%[c], %[ldc], 1)\n\t"
      "vmovups %%" OB_V "3, " OB_VB "(%[c], %[ldc], 1)\n\t"
      "vmovups %%" OB_V "4, (%[c], %[ldc], 2)\n\t"
      "vmovups %%" OB_V "5, " OB_VB "(%[c], %[ldc], 2)\n\t"
      "vmovups %%" OB_V "6, (%[c3])\n\t"
      "vmovups %%" OB_V "7, " OB_VB "(%[c3])\n\t"
      "vmovups %%" OB_V "8, (%[c3], %[ldc], 1)\n\t"
      "vmovups %%" OB_V "9, " OB_VB "(%[c3], %[ldc], 1)\n\t"
      "vmovups %%" OB_V "10, (%[c3], %[ldc], 2)\n\t"
      "vmovups %%" OB_V "11, " OB_VB "(%[c3], %[ldc], 2)\n\t"
      "vzeroupper\n\t"
      : [a] "+r"(a), [b] "+r"(b), [k4] "+r"(k4), [k1] "+r"(k1)
      : [c] "r"(c), [c3] "r"(c3), [ldc] "r"(ldcb), [acc] "r"(acc)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
}
#undef OB_UKR_STEP

#if !defined(__AVX512F__)  // the v4 GEMM has its own edge tile (gemm_tile_edge)
__attribute__((noinline)) void micro_kernel_edge(int64_t kc, const float* a, const float* b, float* c,
                                                 int64_t ldc, bool accumulate, int64_t rows, int64_t cols) {
  alignas(64) float edge[MR * NR];
  micro_kernel(kc, a, b, edge, NR, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q)
      c[r * ldc + q] = accumulate ? c[r * ldc + q] + edge[r * NR + q] : edge[r * NR + q];
}
#endif

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

// Pack rows [0, mc) x k [0, kc) of A into 6-row k-major slivers (zero rows pad the last one). The
// 8-wide stores overlap by two floats, so `out` needs 2 floats of slack.
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

// Pack NR rows (keys) x kd columns of K (row stride ld) into a k-major sliver (kd x NR, row stride NR)
// at out; rows past n are zero.
void pack_k_sliver(int64_t n, int64_t kd, const float* __restrict K, int64_t ld, float* __restrict out) {
  int64_t k = 0;
  if (n == NR) {
    for (; k + 8 <= kd; k += 8)
      for (int64_t h = 0; h < NR / 8; ++h) {
        const float* src = K + h * 8 * ld + k;
        __m256 r0 = _mm256_loadu_ps(src + 0 * ld), r1 = _mm256_loadu_ps(src + 1 * ld);
        __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
        __m256 r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld);
        __m256 r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
        transpose8(r0, r1, r2, r3, r4, r5, r6, r7);
        float* d = out + k * NR + h * 8;
        _mm256_store_ps(d + 0 * NR, r0); _mm256_store_ps(d + 1 * NR, r1);
        _mm256_store_ps(d + 2 * NR, r2); _mm256_store_ps(d + 3 * NR, r3);
        _mm256_store_ps(d + 4 * NR, r4); _mm256_store_ps(d + 5 * NR, r5);
        _mm256_store_ps(d + 6 * NR, r6); _mm256_store_ps(d + 7 * NR, r7);
      }
  }
  for (; k < kd; ++k)
    for (int64_t c = 0; c < NR; ++c) out[k * NR + c] = c < n ? K[c * ld + k] : 0.0f;
}

// B as the column concatenation of two row-major matrices with the same number of rows:
// column j < n0 is p0[k * ld0 + j], column j >= n0 is p1[k * ld1 + j - n0].
struct BSrc {
  const float* p0;
  int64_t ld0, n0;
  const float* p1;
  int64_t ld1;
};

// Pack rows [k0, k0 + kc) x columns [j0, j0 + nc) of B into NR-column k-major slivers (zero columns
// pad the last one).
void pack_b(const BSrc& B, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* __restrict out) {
  const int64_t slivers = (nc + NR - 1) / NR;
  for (int64_t s = 0; s < slivers; ++s) {
    const int64_t ja = j0 + s * NR, cols = std::min(NR, j0 + nc - ja);
    float* dst = out + s * NR * kc;
    const float* src = nullptr;
    int64_t ld = 0;
    if (cols == NR && ja + NR <= B.n0) {
      src = B.p0 + ja;
      ld = B.ld0;
    } else if (cols == NR && ja >= B.n0) {
      src = B.p1 + (ja - B.n0);
      ld = B.ld1;
    }
    if (src != nullptr) {
      src += k0 * ld;
      for (int64_t k = 0; k < kc; ++k) {
        vstore(dst + k * NR, vloadu(src + k * ld));
        vstore(dst + k * NR + VW, vloadu(src + k * ld + VW));
      }
    } else {
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t c = 0; c < NR; ++c) {
          const int64_t j = ja + c;
          float v = 0.0f;
          if (c < cols) v = j < B.n0 ? B.p0[(k0 + k) * B.ld0 + j] : B.p1[(k0 + k) * B.ld1 + (j - B.n0)];
          dst[k * NR + c] = v;
        }
    }
  }
}

#if defined(__AVX512F__)
// The projections' GEMM at v4 (the design of workloads/8p_GEMM/expert.cpp): a 14x32 register tile
// (28 zmm accumulators, 16 loads per 28 FMAs), and the loop nest "K panel -> A block -> B panel ->
// A sliver -> B sliver", so one 14-row A sliver stays in L1 while the packed B panel streams from
// L2, and A is packed once per K panel. On a 2-vCPU Xeon this took 8p's GEMM from 0.77x to 1.03x
// oneDNN; the 6-row tile of the attention stays as it is.

// c[0:R, 0:32] (+)= a(R x kc of a 14-row k-major sliver) * b(kc x 32, k-major, aligned).
template <int R>
__attribute__((noinline)) void gemm_tile(int64_t kc, const float* __restrict a, const float* __restrict b,
                                         float* __restrict c, int64_t ldc, bool accumulate) {
  __m512 lo[R], hi[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    lo[r] = _mm512_setzero_ps();
    hi[r] = _mm512_setzero_ps();
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {  // both lines of each C row: a miss in the epilogue stalls the tile
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + NR - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + VW);
    _mm_prefetch(reinterpret_cast<const char*>(a + 256), _MM_HINT_T0);  // the A sliver, 1 KiB ahead
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      lo[r] = _mm512_fmadd_ps(ar, b0, lo[r]);
      hi[r] = _mm512_fmadd_ps(ar, b1, hi[r]);
    }
    a += GMR;
    b += NR;
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    if (accumulate) {
      lo[r] = _mm512_add_ps(lo[r], _mm512_loadu_ps(cr));
      hi[r] = _mm512_add_ps(hi[r], _mm512_loadu_ps(cr + VW));
    }
    _mm512_storeu_ps(cr, lo[r]);
    _mm512_storeu_ps(cr + VW, hi[r]);
  }
}

template <int R>
void gemm_tile_rows(int64_t rows, int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
  if constexpr (R >= 1) {
    if (rows == R) return gemm_tile<R>(kc, a, b, c, ldc, accumulate);
    gemm_tile_rows<R - 1>(rows, kc, a, b, c, ldc, accumulate);
  }
}

// A partial tile (rows x cols valid), through a scratch tile.
__attribute__((noinline)) void gemm_tile_edge(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                              bool accumulate, int64_t rows, int64_t cols) {
  alignas(64) float edge[GMR * NR];
  gemm_tile<GMR>(kc, a, b, edge, NR, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q) c[r * ldc + q] = accumulate ? c[r * ldc + q] + edge[r * NR + q] : edge[r * NR + q];
}

// Pack rows [0, mc) x k [0, kc) of A into 14-row k-major slivers (zero rows pad the last one):
// 8 rows x 8 k at a time through a register transpose, the 6-row remainder stored with a mask.
void pack_a_tall(int64_t mc, int64_t kc, const float* __restrict A, int64_t lda, float* __restrict out) {
  for (int64_t i0 = 0; i0 < mc; i0 += GMR) {
    const int64_t rows = std::min(GMR, mc - i0);
    const float* src = A + i0 * lda;
    int64_t k = 0;
    if (rows == GMR) {
      for (; k + 8 <= kc; k += 8) {
        for (int64_t r0 = 0; r0 < GMR; r0 += 8) {
          const int64_t nr = std::min<int64_t>(8, GMR - r0);
          __m256 v[8];
          for (int q = 0; q < 8; ++q) v[q] = q < nr ? _mm256_loadu_ps(src + (r0 + q) * lda + k) : _mm256_setzero_ps();
          transpose8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
          const __mmask8 keep = __mmask8((1u << nr) - 1);
          for (int q = 0; q < 8; ++q) _mm256_mask_storeu_ps(out + (k + q) * GMR + r0, keep, v[q]);
        }
      }
    }
    for (; k < kc; ++k) {
      for (int64_t r = 0; r < rows; ++r) out[k * GMR + r] = src[r * lda + k];
      for (int64_t r = rows; r < GMR; ++r) out[k * GMR + r] = 0.0f;
    }
    out += GMR * kc;
  }
}

// Most depth of a K panel: the tuned KC, else ~60% of this host's L1d for the A sliver.
int64_t gemm_kc() {
  if (KC > 0) return kKC;
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  const int64_t bytes = l1 >= 16384 && l1 <= (1 << 20) ? int64_t(l1) : 32768;
  return std::clamp<int64_t>(bytes * 6 / 10 / (GMR * 4) / 8 * 8, 128, kKC);
}

constexpr int64_t a_block_floats() { return kMC * kKC + 64; }
constexpr int64_t b_panel_floats() { return kKC * kNC; }
constexpr int64_t gemm_thread_floats() { return round_up(a_block_floats() + b_panel_floats(), 16); }

// Single-threaded blocked GEMM on columns [n_lo, n_hi) of C: C = A[0:M, 0:K] · B[:, n_lo:n_hi].
void gemm_cols(int64_t M, int64_t K, const float* A, int64_t lda, const BSrc& B, int64_t n_lo, int64_t n_hi,
               float* C, int64_t ldc, float* a_pack, float* b_pack) {
  if (n_lo >= n_hi || M == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = n_lo; j < n_hi; ++j) C[i * ldc + j] = 0.0f;
    return;
  }
  // Even out the blocks so that the last one is not a sliver.
  const int64_t kc_max = gemm_kc();
  const int64_t m_blocks = (M + kMC - 1) / kMC;
  const int64_t mc_step = std::min(kMC, round_up((M + m_blocks - 1) / m_blocks, GMR));
  const int64_t k_blocks = (K + kc_max - 1) / kc_max;
  const int64_t kc_step = std::min(kc_max, round_up((K + k_blocks - 1) / k_blocks, 8));
  for (int64_t pc = 0; pc < K; pc += kc_step) {
    const int64_t kc = std::min(kc_step, K - pc);
    const bool accumulate = pc > 0;
    for (int64_t ic = 0; ic < M; ic += mc_step) {
      const int64_t mc = std::min(mc_step, M - ic);
      pack_a_tall(mc, kc, A + ic * lda + pc, lda, a_pack);
      for (int64_t jc = n_lo; jc < n_hi; jc += kNC) {
        const int64_t nc = std::min(kNC, n_hi - jc);
        const int64_t n_slivers = (nc + NR - 1) / NR;
        pack_b(B, pc, kc, jc, nc, b_pack);
        for (int64_t i0 = 0; i0 < mc; i0 += GMR) {
          const int64_t rows = std::min(GMR, mc - i0);
          const float* ap = a_pack + i0 * kc;
          for (int64_t s = 0; s < n_slivers; ++s) {
            const int64_t j = jc + s * NR;
            const int64_t cols = std::min(NR, n_hi - j);
            const float* bp = b_pack + s * NR * kc;
            float* c = C + (ic + i0) * ldc + j;
            if (cols == NR)
              gemm_tile_rows<GMR>(rows, kc, ap, bp, c, ldc, accumulate);
            else
              gemm_tile_edge(kc, ap, bp, c, ldc, accumulate, rows, cols);
          }
        }
      }
    }
  }
}
#else
constexpr int64_t a_block_floats() { return kMC * kKC + 64; }
constexpr int64_t b_panel_floats() { return kKC * kNC; }
constexpr int64_t gemm_thread_floats() { return round_up(a_block_floats() + b_panel_floats(), 16); }

// Single-threaded blocked GEMM on columns [n_lo, n_hi) of C: C = A[0:M, 0:K] · B[:, n_lo:n_hi].
void gemm_cols(int64_t M, int64_t K, const float* A, int64_t lda, const BSrc& B, int64_t n_lo, int64_t n_hi,
               float* C, int64_t ldc, float* a_pack, float* b_pack) {
  if (n_lo >= n_hi || M == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = n_lo; j < n_hi; ++j) C[i * ldc + j] = 0.0f;
    return;
  }
  // Even out the blocks so that the last one is not a sliver.
  const int64_t m_blocks = (M + kMC - 1) / kMC;
  const int64_t mc_step = std::min(kMC, round_up((M + m_blocks - 1) / m_blocks, MR));
  const int64_t n_blocks = (n_hi - n_lo + kNC - 1) / kNC;
  const int64_t nc_step = std::min(kNC, round_up((n_hi - n_lo + n_blocks - 1) / n_blocks, NR));
  const int64_t k_blocks = (K + kKC - 1) / kKC;
  const int64_t kc_step = std::min(kKC, round_up((K + k_blocks - 1) / k_blocks, 8));
  for (int64_t jc = n_lo; jc < n_hi; jc += nc_step) {
    const int64_t nc = std::min(nc_step, n_hi - jc);
    const int64_t n_slivers = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < K; pc += kc_step) {
      const int64_t kc = std::min(kc_step, K - pc);
      const bool accumulate = pc > 0;
      pack_b(B, pc, kc, jc, nc, b_pack);
      for (int64_t ic = 0; ic < M; ic += mc_step) {
        const int64_t mc = std::min(mc_step, M - ic);
        pack_a(mc, kc, A + ic * lda + pc, lda, a_pack);
        for (int64_t s = 0; s < n_slivers; ++s) {
          const int64_t j = jc + s * NR;
          const int64_t cols = std::min(NR, n_hi - j);
          const float* bp = b_pack + s * NR * kc;
          for (int64_t i0 = 0; i0 < mc; i0 += MR) {
            const int64_t rows = std::min(MR, mc - i0);
            const float* ap = a_pack + i0 * kc;
            float* c = C + (ic + i0) * ldc + j;
            if (rows == MR && cols == NR)
              micro_kernel_full(kc, ap, bp, c, ldc, accumulate);
            else
              micro_kernel_edge(kc, ap, bp, c, ldc, accumulate, rows, cols);
          }
        }
      }
    }
  }
}
#endif

// This thread's share of C = A · B (N columns split into 16-aligned contiguous ranges). No barrier.
void gemm_part(int tid, int team, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const BSrc& B,
               float* C, int64_t ldc, float* a_pack, float* b_pack) {
  const int64_t per = round_up((N + team - 1) / team, NR);
  const int64_t lo = std::min(N, tid * per), hi = std::min(N, lo + per);
  gemm_cols(M, K, A, lda, B, lo, hi, C, ldc, a_pack, b_pack);
}

// ---------------------------------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------------------------------

inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 magic = _mm256_set1_ps(12582912.0f);
  const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504f), magic), magic);
  const __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f),
                                   _mm256_fmadd_ps(n, _mm256_set1_ps(-0.693359375f), x));
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline float hsum(__m256 v) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// One score tile: c[0:6, 0:16] = a(kd x 6, k-major) · b(kd x 16, k-major).
inline void qk_tile(int64_t kd, const float* a, const float* b, float* c, int64_t ldc) {
  micro_kernel_full(kd, a, b, c, ldc, false);
}

// o[0:6, 0:NR] = alpha_r · o + p(6 x kn, row-major, row stride lp) · v(kn x NR, row stride lv); o is
// vector-aligned with row stride lo. Inline asm for the same reason as the GEMM micro-kernel.
#define OB_PV_STEP(o)                                      \
  "vmovups (%[v]), %%" OB_V "12\n\t"                            \
  "vmovups " OB_VB "(%[v]), %%" OB_V "13\n\t"                          \
  "add %[lv], %[v]\n\t"                                    \
  "vbroadcastss " #o "*4(%[p0]), %%" OB_V "14\n\t"              \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "0\n\t"               \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "1\n\t"               \
  "vbroadcastss " #o "*4(%[p0], %[lp], 1), %%" OB_V "15\n\t"    \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "2\n\t"               \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "3\n\t"               \
  "vbroadcastss " #o "*4(%[p0], %[lp], 2), %%" OB_V "14\n\t"    \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "4\n\t"               \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "5\n\t"               \
  "vbroadcastss " #o "*4(%[p3]), %%" OB_V "15\n\t"              \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "6\n\t"               \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "7\n\t"               \
  "vbroadcastss " #o "*4(%[p3], %[lp], 1), %%" OB_V "14\n\t"    \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "14, %%" OB_V "8\n\t"               \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "14, %%" OB_V "9\n\t"               \
  "vbroadcastss " #o "*4(%[p3], %[lp], 2), %%" OB_V "15\n\t"    \
  "vfmadd231ps %%" OB_V "12, %%" OB_V "15, %%" OB_V "10\n\t"              \
  "vfmadd231ps %%" OB_V "13, %%" OB_V "15, %%" OB_V "11\n\t"

#define OB_PV_ROW(r, addr, acc0, acc1)                 \
  "vbroadcastss " #r "*4(%[al]), %%" OB_V "14\n\t"            \
  "vfmadd231ps " addr ", %%" OB_V "14, %%" acc0 "\n\t"        \
  "vfmadd231ps " OB_VB addr ", %%" OB_V "14, %%" acc1 "\n\t"      \
  "vmovaps %%" acc0 ", " addr "\n\t"                     \
  "vmovaps %%" acc1 ", " OB_VB addr "\n\t"

__attribute__((noinline)) void pv_tile(int64_t kn, const float* p, int64_t lp, const float* v, int64_t lv,
                                       float* o, int64_t lo, const float* alpha) {
  int64_t k4 = kn / 4, k1 = kn % 4;
  const float* p0 = p;
  const float* p3 = p + 3 * lp;
  const int64_t lpb = lp * int64_t(sizeof(float)), lvb = lv * int64_t(sizeof(float));
  const int64_t lob = lo * int64_t(sizeof(float));
  float* o3 = o + 3 * lo;
  __asm__ volatile(
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
      "test %[k4], %[k4]\n\t"
      "jz 2f\n\t"
      ".p2align 5\n\t"
      "1:\n\t"
      OB_PV_STEP(0) OB_PV_STEP(1) OB_PV_STEP(2) OB_PV_STEP(3)
      "add $16, %[p0]\n\t"
      "add $16, %[p3]\n\t"
      "dec %[k4]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      "test %[k1], %[k1]\n\t"
      "jz 4f\n\t"
      "3:\n\t"
      OB_PV_STEP(0)
      "add $4, %[p0]\n\t"
      "add $4, %[p3]\n\t"
      "dec %[k1]\n\t"
      "jnz 3b\n\t"
      "4:\n\t"
      OB_PV_ROW(0, "(%[o])", OB_V "0", OB_V "1")
      OB_PV_ROW(1, "(%[o], %[lo], 1)", OB_V "2", OB_V "3")
      OB_PV_ROW(2, "(%[o], %[lo], 2)", OB_V "4", OB_V "5")
      OB_PV_ROW(3, "(%[o3])", OB_V "6", OB_V "7")
      OB_PV_ROW(4, "(%[o3], %[lo], 1)", OB_V "8", OB_V "9")
      OB_PV_ROW(5, "(%[o3], %[lo], 2)", OB_V "10", OB_V "11")
      "vzeroupper\n\t"
      : [p0] "+r"(p0), [p3] "+r"(p3), [v] "+r"(v), [k4] "+r"(k4), [k1] "+r"(k1)
      : [lp] "r"(lpb), [lv] "r"(lvb), [o] "r"(o), [o3] "r"(o3), [lo] "r"(lob), [al] "r"(alpha)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
}
#undef OB_PV_STEP
#undef OB_PV_ROW

struct AttnBuf {
  float* qp;     // kBQ x Dk, 6-row k-major slivers (rotated, scaled)
  float* qrow;   // kBQ x Dk row-major staging of the query block
  float* sc;     // kBQ x kBK scores / probabilities
  float* ob;     // kBQ x Dvp accumulator
  float* m;      // running max per row
  float* l;      // running sum per row
  float* alpha;  // rescale of the chunk per row
  int32_t* rhi;  // kept keys per row in the chunk: [0, rhi) relative to the chunk start
};

// Causal flash attention of one (batch, head) over query rows [i0, i1), with the query block packed
// in ab.qp. Kt: 16-key slivers (Dk x 16) of this head's keys; V: row stride ldv (16 columns readable
// from every row, Dvp >= Dv); output rows of Dv floats at stride ldo.
void attend_block(int64_t Dk, int64_t Dv, int64_t Dvp, const float* __restrict Kt, const float* __restrict V,
                  int64_t ldv, float* __restrict O, int64_t ldo, int64_t i0, int64_t i1, const AttnBuf& ab) {
  const int64_t rows = i1 - i0;
  const int64_t rows_p = round_up(rows, MR);
  const int64_t tiles = rows_p / MR;
  for (int64_t r = 0; r < rows_p; ++r) {
    ab.m[r] = -INFINITY;
    ab.l[r] = 0.0f;
  }
  std::memset(ab.ob, 0, size_t(rows_p * Dvp) * sizeof(float));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  const int64_t kend = round_up(i1, NR);
  for (int64_t j0 = 0; j0 < kend; j0 += kBK) {
    const int64_t cw = std::min(kBK, kend - j0);  // multiple of 16
    const bool diag = j0 + cw - 1 > i0;           // some pair of the chunk is above the diagonal
    // Scores, skipping tiles entirely above the diagonal.
    for (int64_t c = 0; c < cw; c += NR) {
      const float* kb = Kt + (j0 + c) * Dk;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t ia = i0 + t * MR;
        if (ia >= i1) break;
        const int64_t ib = std::min(ia + MR, i1) - 1;
        if (j0 + c > ib) continue;
        qk_tile(Dk, ab.qp + t * MR * Dk, kb, ab.sc + t * MR * kBK + c, kBK);
      }
    }
    // Online softmax per row over keys [j0, min(j0 + cw, i + 1)).
    for (int64_t r = 0; r < rows_p; ++r) {
      float* row = ab.sc + r * kBK;
      const int64_t i = i0 + r;
      const int64_t hi = r < rows ? std::min(cw, i + 1 - j0) : 0;
      if (hi <= 0) {
        ab.alpha[r] = 1.0f;
        ab.rhi[r] = 0;
        for (int64_t c = 0; c < cw; c += 8) _mm256_store_ps(row + c, _mm256_setzero_ps());
        continue;
      }
      ab.rhi[r] = int32_t(hi);
      const int64_t hi8 = round_up(hi, 8);
      __m256 mx = neg_inf;
      const __m256i ip1 = _mm256_set1_epi32(int32_t(i + 1));
      if (!diag || hi == cw) {
        for (int64_t c = 0; c < hi8; c += 8) mx = _mm256_max_ps(mx, _mm256_load_ps(row + c));
      } else {
        for (int64_t c = 0; c < hi8; c += 8) {
          const __m256i jv = _mm256_add_epi32(lane, _mm256_set1_epi32(int32_t(j0 + c)));
          const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(ip1, jv));
          mx = _mm256_max_ps(mx, _mm256_blendv_ps(neg_inf, _mm256_load_ps(row + c), keep));
        }
      }
      const float m_old = ab.m[r];
      const float m_new = std::max(m_old, hmax(mx));
      const float al = std::exp(m_old - m_new);
      ab.alpha[r] = al;
      ab.m[r] = m_new;
      const __m256 mv = _mm256_set1_ps(m_new);
      __m256 sum = _mm256_setzero_ps();
      if (!diag || hi == cw) {
        for (int64_t c = 0; c < hi8; c += 8) {
          const __m256 p = exp256(_mm256_sub_ps(_mm256_load_ps(row + c), mv));
          _mm256_store_ps(row + c, p);
          sum = _mm256_add_ps(sum, p);
        }
      } else {
        for (int64_t c = 0; c < hi8; c += 8) {
          const __m256i jv = _mm256_add_epi32(lane, _mm256_set1_epi32(int32_t(j0 + c)));
          const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(ip1, jv));
          const __m256 p = _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_load_ps(row + c), mv)), keep);
          _mm256_store_ps(row + c, p);
          sum = _mm256_add_ps(sum, p);
        }
      }
      for (int64_t c = hi8; c < cw; c += 8) _mm256_store_ps(row + c, _mm256_setzero_ps());
      ab.l[r] = ab.l[r] * al + hsum(sum);
    }
    // O = alpha·O + P·V per 6-row tile, up to its last row's last kept key.
    for (int64_t t = 0; t < tiles; ++t) {
      int64_t khi = 0;
      for (int64_t r = t * MR; r < t * MR + MR; ++r) khi = std::max<int64_t>(khi, ab.rhi[r]);
      if (khi == 0) continue;
      const float* pt = ab.sc + t * MR * kBK;
      const float* vt = V + j0 * ldv;
      for (int64_t n = 0; n < Dvp; n += NR)
        pv_tile(khi, pt, kBK, vt + n, ldv, ab.ob + t * MR * Dvp + n, Dvp, ab.alpha + t * MR);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float inv = 1.0f / ab.l[r];
    const float* src = ab.ob + r * Dvp;
    float* dst = O + (i0 + r) * ldo;
    const __m256 iv = _mm256_set1_ps(inv);
    int64_t d = 0;
    for (; d + 8 <= Dv; d += 8) _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_load_ps(src + d), iv));
    for (; d < Dv; ++d) dst[d] = src[d] * inv;
  }
}

// ---------------------------------------------------------------------------------------------------
// The workload
// ---------------------------------------------------------------------------------------------------

struct Dims {
  int64_t B, S, E, RQ, RKV, H, DN, DR, DV;
};

Dims dims_of(const ob_call* call) {
  Dims d;
  d.B = call->inputs[0].shape[0];
  d.S = call->inputs[0].shape[1];
  d.E = call->inputs[0].shape[2];
  d.RQ = call->inputs[1].shape[1];
  d.RKV = call->inputs[4].shape[0];
  d.DR = call->inputs[3].shape[1] - d.RKV;
  d.H = (call->inputs[2].shape[1] - call->inputs[4].shape[1]) / d.DR;
  d.DN = call->inputs[4].shape[1] / d.H;
  d.DV = call->inputs[5].shape[1] / d.H;
  return d;
}

int32_t thread_count(const ob_call* call) { return std::max<int32_t>(1, call->num_threads); }

// Workspace layout (floats, each region 16-aligned).
struct Layout {
  int64_t c1, q, kv, o, krr, cs, kt, vp, thr;  // offsets
  int64_t attn_floats, thread_floats, total;
};

Layout layout_of(const Dims& d, int32_t threads) {
  const int64_t T = d.B * d.S, W = d.DN + d.DR, half = d.DR / 2;
  const int64_t C1 = d.RQ + d.RKV + d.DR, HW = d.H * W, HKV = d.H * (d.DN + d.DV), HV = d.H * d.DV;
  const int64_t Spad = round_up(d.S, NR), Dvp = round_up(d.DV, NR);
  Layout L;
  int64_t off = 0;
  auto take = [&](int64_t n) {
    const int64_t at = off;
    off += round_up(n, 16);
    return at;
  };
  L.c1 = take(T * C1);
  L.q = take(T * HW);
  L.kv = take(T * HKV);
  L.o = take(T * HV);
  L.krr = take(T * d.DR);
  L.cs = take(2 * d.S * half);
  L.kt = take(d.B * d.H * Spad * W);
  L.vp = take(d.B * d.H * d.S * Dvp);
  L.attn_floats = 2 * round_up(kBQ * W + 64, 16) + kBQ * kBK + kBQ * Dvp + 4 * round_up(kBQ, 16);
  L.thread_floats = std::max(gemm_thread_floats(), L.attn_floats);
  L.thr = take(0);
  L.total = L.thr + threads * L.thread_floats + 16;
  return L;
}

float* align_up(void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((u + 63) / 64 * 64);
}

}  // namespace

OB_DEFINE_ABI_VERSION()

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(layout_of(dims_of(call), thread_count(call)).total) * sizeof(float) + 64;
}

extern "C" int32_t ob_run(const ob_call* call) {
  const Dims d = dims_of(call);
  const int64_t T = d.B * d.S, W = d.DN + d.DR, half = d.DR / 2;
  const int64_t C1 = d.RQ + d.RKV + d.DR, HW = d.H * W, HN = d.H * d.DN, HKV = d.H * (d.DN + d.DV),
                HV = d.H * d.DV;
  const int64_t Spad = round_up(d.S, NR), Dvp = round_up(d.DV, NR);
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* Wqd = static_cast<const float*>(call->inputs[1].data);
  const float* Wqu = static_cast<const float*>(call->inputs[2].data);
  const float* Wkvd = static_cast<const float*>(call->inputs[3].data);
  const float* Wku = static_cast<const float*>(call->inputs[4].data);
  const float* Wvu = static_cast<const float*>(call->inputs[5].data);
  const float* Wo = static_cast<const float*>(call->inputs[6].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  if (T * d.E == 0) return 0;

  const int32_t threads = thread_count(call);
  const Layout L = layout_of(d, threads);
  const uint64_t need = uint64_t(L.total) * sizeof(float) + 64;
  void* heap = nullptr;
  void* scratch = call->workspace;
  if (scratch == nullptr || call->workspace_bytes < need) {
    heap = std::malloc(need);
    if (heap == nullptr) return 1;
    scratch = heap;
  }
  float* ws = align_up(scratch);
  float* c1 = ws + L.c1;    // (T, RQ + RKV + DR): [cq | latent | kr]
  float* q = ws + L.q;      // (T, H, W)
  float* kv = ws + L.kv;    // (T, H·DN + H·DV): [k_nope | v]
  float* o = ws + L.o;      // (T, H, DV)
  float* krr = ws + L.krr;  // (T, DR): rotated shared rope key
  float* cosines = ws + L.cs;
  float* sines = cosines + d.S * half;
  float* kt = ws + L.kt;  // per (b, h): 16-key slivers of [k_nope ‖ rope(kr)], W x 16 each
  float* vp = ws + L.vp;  // per (b, h): v rows (S x Dvp, zero-padded), contiguous
  const float scale = float(1.0 / std::sqrt(double(W)));
  const int64_t slivers = Spad / NR;
  const int64_t nqb = (d.S + kBQ - 1) / kBQ;
  const int64_t attn_tasks = d.B * d.H * nqb;

#pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num(), team = omp_get_num_threads();
    float* tbuf = ws + L.thr + int64_t(tid) * L.thread_floats;
    float* a_pack = tbuf;
    float* b_pack = tbuf + a_block_floats();

    // RoPE table: cos/sin(s·θ_j) in double by angle addition, s = 32·u + v.
#pragma omp for schedule(static)
    for (int64_t j = 0; j < half; ++j) {
      const double theta = std::pow(10000.0, -2.0 * double(j) / double(d.DR));
      double cv[32], sv[32];
      for (int v = 0; v < 32; ++v) {
        cv[v] = std::cos(double(v) * theta);
        sv[v] = std::sin(double(v) * theta);
      }
      for (int64_t s0 = 0; s0 < d.S; s0 += 32) {
        const double cu = std::cos(double(s0) * theta), su = std::sin(double(s0) * theta);
        for (int64_t v = 0; v < 32 && s0 + v < d.S; ++v) {
          cosines[(s0 + v) * half + j] = float(cu * cv[v] - su * sv[v]);
          sines[(s0 + v) * half + j] = float(su * cv[v] + cu * sv[v]);
        }
      }
    }  // implicit barrier (the table is read after the next barrier anyway)

    // 1. [cq | latent | kr] = x · [Wqd | Wkvd].
    gemm_part(tid, team, T, C1, d.E, X, d.E, BSrc{Wqd, d.RQ, d.RQ, Wkvd, d.RKV + d.DR}, c1, C1, a_pack, b_pack);
#pragma omp barrier
    // 2. q = cq · Wqu and [k_nope | v] = latent · [Wku | Wvu] (no barrier between them).
    gemm_part(tid, team, T, HW, d.RQ, c1, C1, BSrc{Wqu, HW, HW, Wqu, HW}, q, HW, a_pack, b_pack);
    gemm_part(tid, team, T, HKV, d.RKV, c1 + d.RQ, C1, BSrc{Wku, HN, HN, Wvu, HV}, kv, HKV, a_pack, b_pack);
    // Rotated shared rope key per token.
#pragma omp for schedule(static)
    for (int64_t t = 0; t < T; ++t) {
      const float* kr = c1 + t * C1 + d.RQ + d.RKV;
      const float* cs = cosines + (t % d.S) * half;
      const float* sn = sines + (t % d.S) * half;
      float* dst = krr + t * d.DR;
      for (int64_t j = 0; j < half; ++j) {
        const float a = kr[j], b = kr[j + half];
        dst[j] = a * cs[j] - b * sn[j];
        dst[j + half] = b * cs[j] + a * sn[j];
      }
      if (d.DR % 2) dst[d.DR - 1] = kr[d.DR - 1];
    }  // implicit barrier: q, kv and krr complete
    // 3. Pack the keys, per (b, h), into slivers of 16 keys (rows d < DN from k_nope, then rope(kr)),
    //    and the values into contiguous S x Dvp rows (in the GEMM output, the rows of one head are
    //    H·(DN+DV) floats apart: 8 KiB at the cpu size, which maps a P·V chunk onto a few L1 sets).
#pragma omp for schedule(static)
    for (int64_t t = 0; t < d.B * d.H * slivers; ++t) {
      const int64_t bh = t / slivers, sl = t % slivers;
      const int64_t b = bh / d.H, h = bh % d.H;
      float* dst = kt + (bh * slivers + sl) * NR * W;
      const int64_t j0 = sl * NR;
      const int64_t n = std::min(NR, d.S - j0);
      const int64_t tok = b * d.S + j0;
      pack_k_sliver(n, d.DN, kv + tok * HKV + h * d.DN, HKV, dst);
      pack_k_sliver(n, d.DR, krr + tok * d.DR, d.DR, dst + d.DN * NR);
      for (int64_t c = 0; c < n; ++c) {
        const float* src = kv + (tok + c) * HKV + HN + h * d.DV;
        float* vd = vp + (bh * d.S + j0 + c) * Dvp;
        std::memcpy(vd, src, size_t(d.DV) * sizeof(float));
        for (int64_t e = d.DV; e < Dvp; ++e) vd[e] = 0.0f;
      }
    }  // implicit barrier
    // 4. Causal flash attention per (b, h, query block), heaviest blocks first.
    {
      AttnBuf ab;
      ab.qp = tbuf;
      ab.qrow = ab.qp + round_up(kBQ * W + 64, 16);
      ab.sc = ab.qrow + round_up(kBQ * W + 64, 16);
      ab.ob = ab.sc + kBQ * kBK;
      ab.m = ab.ob + kBQ * Dvp;
      ab.l = ab.m + round_up(kBQ, 16);
      ab.alpha = ab.l + round_up(kBQ, 16);
      ab.rhi = reinterpret_cast<int32_t*>(ab.alpha + round_up(kBQ, 16));
#pragma omp for schedule(dynamic, 1)
      for (int64_t task = 0; task < attn_tasks; ++task) {
        const int64_t qb = nqb - 1 - task / (d.B * d.H);
        const int64_t bh = task % (d.B * d.H);
        const int64_t b = bh / d.H, h = bh % d.H;
        const int64_t i0 = qb * kBQ, i1 = std::min(d.S, i0 + kBQ);
        const int64_t rows = i1 - i0;
        // Pack the query block: scaled q_nope, scaled rope(q_rope), via a row-major staging block.
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          const float* src = q + (b * d.S + i) * HW + h * W;
          const float* cs = cosines + i * half;
          const float* sn = sines + i * half;
          float* dst = ab.qrow + r * W;
          for (int64_t e = 0; e < d.DN; ++e) dst[e] = src[e] * scale;
          const float* u = src + d.DN;
          float* w = dst + d.DN;
          for (int64_t j = 0; j < half; ++j) {
            w[j] = (u[j] * cs[j] - u[j + half] * sn[j]) * scale;
            w[j + half] = (u[j + half] * cs[j] + u[j] * sn[j]) * scale;
          }
          if (d.DR % 2) w[d.DR - 1] = u[d.DR - 1] * scale;  // odd DR: last channel unrotated
        }
        pack_a(rows, W, ab.qrow, W, ab.qp);
        attend_block(W, d.DV, Dvp, kt + bh * slivers * NR * W, vp + bh * d.S * Dvp, Dvp, o + b * d.S * HV + h * d.DV,
                     HV, i0, i1, ab);
      }
    }  // implicit barrier: o complete
    // 5. out = O · Wo.
    gemm_part(tid, team, T, d.E, HV, o, HV, BSrc{Wo, d.E, d.E, Wo, d.E}, Out, d.E, a_pack, b_pack);
  }
  std::free(heap);
  return 0;
}
