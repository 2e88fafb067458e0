// 4p_Sparse_Attention expert: block-sparse flash attention (GQA, causal sliding window + global keys),
// AVX2/FMA, no libraries.
//
//  - Mask: keep(i, j) = j <= i && (i - j < W || j < G), W = S/4, G = S/32 (from S, as the workload says).
//  - Work: per (batch, kv head, block of BQ query rows) task, the query heads of the group run one after
//    the other (their K/V window stays in L2). A query block only visits the keys that can be kept:
//    the global prefix [0, G) and the window [i0 - W + 1, i1), in chunks of at most BK keys (16-aligned).
//    Inside a chunk, 6x16 score tiles with no kept pair are not computed at all, each row's softmax
//    reads only the 8-wide vectors that overlap its kept range, and P·V for a 6-row tile runs only
//    over the union of its rows' kept keys, so the work is within a few % of the kept pairs. Partial
//    tiles are masked exactly (p = 0); chunks whose every pair is kept skip the mask.
//  - Online softmax (running max / sum per row, rescale of the O accumulator fused into the P·V
//    micro-kernel's epilogue), vectorized exp (Cephes polynomial); at x86-64-v4 on 16 lanes with the
//    keep mask in a mask register (~5% of the time at the cpu size against the 8-lane version).
//  - Micro-kernels (6x16, 12 ymm accumulators, inline asm): S = Q·Kᵀ with Q packed 6-row k-major and
//    K pre-packed once per call into 16-key slivers (D x 16); O = alpha·O + P·V with V read in place
//    (V is copied to a 16-padded layout only when D % 16 != 0).
//  - Threads: dynamic schedule over tasks, heaviest query blocks first.
//  - S < 4 (W = 0): every pair is dropped and every row is the plain mean of v, as the reference
//    computes it (the baseline writes 0 there).
#include <opbench/kernel.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "expert.cpp needs AVX2 and FMA"
#endif

// The vector of the micro-kernels: zmm where the build allows AVX-512 (x86-64-v4), else ymm. Register
// tiles are 6 x NR with NR = 2 vectors (32 columns at v4, 16 at v3).
#if defined(__AVX512F__)
#define OB_V "zmm"
#define OB_VB "64"  // bytes per vector
typedef __m512 vec;
static inline vec vload(const float* p) { return _mm512_load_ps(p); }
static inline vec vloadu(const float* p) { return _mm512_loadu_ps(p); }
static inline void vstore(float* p, vec v) { _mm512_store_ps(p, v); }
#else
#define OB_V "ymm"
#define OB_VB "32"
typedef __m256 vec;
static inline vec vload(const float* p) { return _mm256_load_ps(p); }
static inline vec vloadu(const float* p) { return _mm256_loadu_ps(p); }
static inline void vstore(float* p, vec v) { _mm256_store_ps(p, v); }
#endif

// opbench:param BQ 48 96 144
// Query rows per block (multiple of 6): larger reuses each K/V chunk over more rows (masked tiles are
// skipped at 6x16 granularity whatever the block size).
#ifndef BQ
#define BQ 96
#endif
// opbench:param BK 64 128 256
// Keys per chunk (multiple of 16): the score block is BQ x BK, the V chunk BK x D.
#ifndef BK
#define BK 128
#endif

namespace {

constexpr int64_t MR = 6;
constexpr int64_t VW = int64_t(sizeof(vec) / sizeof(float));  // floats per vector: 16 (zmm) or 8 (ymm)
constexpr int64_t NR = 2 * VW;                                 // columns of a register tile
constexpr int64_t kBQ = (BQ + MR - 1) / MR * MR;
constexpr int64_t kBK = (BK + NR - 1) / NR * NR;
static_assert(kBQ > 0 && kBK > 0, "block sizes must be positive");

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct Shape {
  int64_t B, Hq, Hkv, S, D, group, W, G, Spad, Dp;
};

Shape shape_of(const ob_call* call) {
  Shape s;
  const ob_tensor& q = call->inputs[0];
  s.B = q.shape[0];
  s.Hq = q.shape[1];
  s.S = q.shape[2];
  s.D = q.shape[3];
  s.Hkv = call->inputs[1].shape[1];
  s.group = s.Hkv > 0 ? s.Hq / s.Hkv : 1;
  s.W = s.S / 4;
  s.G = s.S / 32;
  s.Spad = round_up(s.S, NR);
  s.Dp = round_up(s.D, NR);
  return s;
}

int32_t thread_count(const ob_call* call) { return std::max<int32_t>(1, call->num_threads); }

// Floats: packed K for every (b, kv head); padded V if D % 16 != 0; per thread the Q block, the
// score block, the O accumulator and the row state.
int64_t kt_floats(const Shape& s) { return s.B * s.Hkv * s.Spad * s.D; }
int64_t vp_floats(const Shape& s) { return s.D % NR ? s.B * s.Hkv * s.S * s.Dp : 0; }
int64_t thread_floats(const Shape& s) {
  return round_up(kBQ * s.D + 64, 16) + kBQ * kBK + kBQ * s.Dp + 5 * round_up(kBQ, 16);
}
uint64_t scratch_bytes(const Shape& s, int32_t threads) {
  return uint64_t(kt_floats(s) + vp_floats(s) + threads * thread_floats(s) + 64) * sizeof(float);
}

// Cephes exp on 8 lanes (relative error < 1e-7 on [-87, 88]; inputs are clamped to that range).
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

// Pack rows [0, m) x columns [0, kd) of A (row stride lda) into 6-row k-major slivers, zero rows
// padding the last one. The 8-wide stores overlap by two floats: `out` needs 2 floats of slack.
void pack_a(int64_t m, int64_t kd, const float* __restrict A, int64_t lda, float* __restrict out) {
  for (int64_t i0 = 0; i0 < m; i0 += MR) {
    const int64_t rows = std::min(MR, m - i0);
    const float* src = A + i0 * lda;
    int64_t k = 0;
    if (rows == MR) {
      const __m256 z = _mm256_setzero_ps();
      for (; k + 8 <= kd; k += 8) {
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
    for (; k < kd; ++k) {
      for (int64_t r = 0; r < rows; ++r) out[k * MR + r] = src[r * lda + k];
      for (int64_t r = rows; r < MR; ++r) out[k * MR + r] = 0.0f;
    }
    out += MR * kd;
  }
}

// Pack 16 rows (keys) x kd columns of K (row stride ld) into one k-major sliver (kd x 16); rows past n
// are zero.
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

// c[0:6, 0:16] (+)= a(kc x 6, k-major) · b(kc x 16, k-major), in inline asm: GCC's register allocation
// of the intrinsic version folds B loads into the FMAs and spills.
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

// Does the tile rows [ia, ib] x keys [ja, jb] hold a kept pair?
inline bool tile_has_kept(int64_t ia, int64_t ib, int64_t ja, int64_t jb, int64_t W, int64_t G) {
  if (ja > ib) return false;
  if (ja < G) return true;
  return ia - std::min(jb, ib) < W;
}

// Kept keys of row i inside [j0, j1): the hull [lo, hi) of the global and window intervals (empty if
// lo >= hi). Entries of the hull that are not kept are masked by the softmax.
inline void row_range(int64_t i, int64_t j0, int64_t j1, int64_t W, int64_t G, int64_t& lo, int64_t& hi) {
  lo = j1;
  hi = j0;
  const int64_t ge = std::min({G, i + 1, j1});
  if (ge > j0) {
    lo = j0;
    hi = ge;
  }
  const int64_t ws = std::max(j0, i - W + 1), we = std::min(j1, i + 1);
  if (we > ws) {
    lo = std::min(lo, ws);
    hi = std::max(hi, we);
  }
}

#if defined(__AVX512F__)
// exp256 on 16 lanes (the same range reduction and polynomial).
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504f), magic), magic);
  const __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f),
                                   _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x));
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

// The lanes of the softmax: 16 at x86-64-v4, the keep mask a mask register.
struct Lanes {
  static constexpr int64_t N = 16;
  using V = __m512;
  using M = __mmask16;
  static V load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, V v) { _mm512_store_ps(p, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V exp(V x) { return exp512(x); }
  static float hmax(V v) { return _mm512_reduce_max_ps(v); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  // keep(i, j) = j <= i && (i - j < W || j < G) for keys j0 + c .. j0 + c + 15
  static M keep(int64_t i, int64_t jc, int64_t W, int64_t G) {
    const __m512i jv = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                        _mm512_set1_epi32(int32_t(jc)));
    const __mmask16 causal = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(int32_t(i + 1)), jv);
    const __mmask16 window = _mm512_cmpgt_epi32_mask(jv, _mm512_set1_epi32(int32_t(i - W)));
    const __mmask16 global = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(int32_t(G)), jv);
    return __mmask16(causal & (window | global));
  }
  static V max_kept(V acc, M m, V v) { return _mm512_mask_max_ps(acc, m, acc, v); }
  static V kept(M m, V p) { return _mm512_maskz_mov_ps(m, p); }
};
#else
// The lanes of the softmax: 8 at x86-64-v3, the keep mask a vector of all-ones lanes.
struct Lanes {
  static constexpr int64_t N = 8;
  using V = __m256;
  using M = __m256;
  static V load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, V v) { _mm256_store_ps(p, v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V zero() { return _mm256_setzero_ps(); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V exp(V x) { return exp256(x); }
  static float hmax(V v) { return ::hmax(v); }
  static float hsum(V v) { return ::hsum(v); }
  static M keep(int64_t i, int64_t jc, int64_t W, int64_t G) {
    const __m256i jv = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int32_t(jc)));
    return _mm256_castsi256_ps(
        _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(i + 1)), jv),
                         _mm256_or_si256(_mm256_cmpgt_epi32(jv, _mm256_set1_epi32(int32_t(i - W))),
                                         _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(G)), jv))));
  }
  static V max_kept(V acc, M m, V v) { return _mm256_max_ps(acc, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), v, m)); }
  static V kept(M m, V p) { return _mm256_and_ps(p, m); }
};
#endif

// One row of a chunk (cw scores at `row`, keys j0 ...; cw a multiple of 16): update the running max m
// and sum l, write p = exp(s - m) over the kept keys of [lo, hi) (hull widened to whole vectors) and 0
// elsewhere, and the rescale alpha of the row's accumulator. With Masked = false every key of [0, cw)
// is kept. Scores outside the kept pairs may be stale (their tiles were skipped): masked before use.
template <bool Masked>
inline void softmax_row(float* __restrict row, int64_t cw, int64_t lo, int64_t hi, int64_t i, int64_t j0, int64_t W,
                        int64_t G, float& m, float& l, float& alpha) {
  using L = Lanes;
  constexpr int64_t N = L::N;
  const int64_t lov = lo / N * N, hiv = round_up(hi, N);
  const typename L::V neg_inf = L::set1(-INFINITY);
  typename L::V mx0 = neg_inf, mx1 = neg_inf;
  int64_t c = lov;
  if (!Masked)
    for (; c + 2 * N <= hiv; c += 2 * N) {
      mx0 = L::max(mx0, L::load(row + c));
      mx1 = L::max(mx1, L::load(row + c + N));
    }
  for (; c < hiv; c += N) {
    const typename L::V v = L::load(row + c);
    mx0 = Masked ? L::max_kept(mx0, L::keep(i, j0 + c, W, G), v) : L::max(mx0, v);
  }
  const float m_new = std::max(m, L::hmax(L::max(mx0, mx1)));
  const float al = m_new == m ? 1.0f : std::exp(m - m_new);  // 0 on the first kept chunk
  alpha = al;
  m = m_new;
  const typename L::V mv = L::set1(m_new);
  typename L::V sum0 = L::zero(), sum1 = L::zero();
  c = lov;
  if (!Masked)
    for (; c + 2 * N <= hiv; c += 2 * N) {
      const typename L::V p0 = L::exp(L::sub(L::load(row + c), mv));
      const typename L::V p1 = L::exp(L::sub(L::load(row + c + N), mv));
      L::store(row + c, p0);
      L::store(row + c + N, p1);
      sum0 = L::add(sum0, p0);
      sum1 = L::add(sum1, p1);
    }
  for (; c < hiv; c += N) {
    typename L::V p = L::exp(L::sub(L::load(row + c), mv));
    if (Masked) p = L::kept(L::keep(i, j0 + c, W, G), p);
    L::store(row + c, p);
    sum0 = L::add(sum0, p);
  }
  for (c = 0; c < lov; c += N) L::store(row + c, L::zero());
  for (c = hiv; c < cw; c += N) L::store(row + c, L::zero());
  l = l * al + L::hsum(L::add(sum0, sum1));
}

struct ThreadBuf {
  float* qp;     // kBQ x D, packed in 6-row k-major slivers
  float* sc;     // kBQ x kBK scores / probabilities
  float* ob;     // kBQ x Dp accumulator
  float* m;      // running max per row
  float* l;      // running sum per row
  float* alpha;  // rescale of the chunk per row
  int32_t* rlo;  // kept hull per row in the chunk (relative to the chunk start)
  int32_t* rhi;
};

// One query head over one query block [i0, i1).
void attend_block(const Shape& s, const float* __restrict Qh, const float* __restrict Kt,
                  const float* __restrict Vg, int64_t ldv, float* __restrict Oh, int64_t i0, int64_t i1,
                  const ThreadBuf& tb) {
  const int64_t D = s.D, Dp = s.Dp, W = s.W, G = s.G;
  const int64_t rows = i1 - i0;
  const int64_t rows_p = round_up(rows, MR);
  const int64_t tiles = rows_p / MR;

  // Pack Q: 6-row slivers, k-major; missing rows are zero.
  pack_a(rows, D, Qh + i0 * D, D, tb.qp);
  for (int64_t r = 0; r < rows_p; ++r) {
    tb.m[r] = -INFINITY;
    tb.l[r] = 0.0f;
  }
  std::memset(tb.ob, 0, size_t(rows_p * Dp) * sizeof(float));

  // Key ranges: globals and the window, merged when they touch.
  const int64_t wlo = std::max<int64_t>(0, i0 - W + 1) / NR * NR;
  const int64_t gend = round_up(std::min(G, i1), NR);
  const int64_t kend = round_up(i1, NR);
  int64_t ranges[2][2];
  int nr = 0;
  if (gend >= wlo) {
    ranges[nr][0] = 0; ranges[nr][1] = kend; ++nr;
  } else {
    ranges[nr][0] = 0; ranges[nr][1] = gend; ++nr;
    ranges[nr][0] = wlo; ranges[nr][1] = kend; ++nr;
  }

  for (int ri = 0; ri < nr; ++ri) {
    for (int64_t j0 = ranges[ri][0]; j0 < ranges[ri][1]; j0 += kBK) {
      const int64_t cw = std::min(kBK, ranges[ri][1] - j0);  // multiple of 16
      const int64_t j1 = j0 + cw;
      // Scores, tile by tile, skipping tiles without kept pairs.
      for (int64_t c = 0; c < cw; c += NR) {
        const float* kb = Kt + (j0 + c) * D;  // sliver (j0 + c) / 16, D x 16
        for (int64_t t = 0; t < tiles; ++t) {
          const int64_t ia = i0 + t * MR;
          if (ia >= i1) break;
          const int64_t ib = std::min(ia + MR, i1) - 1;
          if (!tile_has_kept(ia, ib, j0 + c, j0 + c + NR - 1, W, G)) continue;
          qk_tile(D, tb.qp + t * MR * D, kb, tb.sc + t * MR * kBK + c, kBK);
        }
      }
      // Online softmax per row over its kept hull (8-aligned), zeros elsewhere in the chunk. When every
      // pair of the block x chunk is kept (most window chunks), no row needs a mask.
      const bool full = j1 - 1 <= i0 && (i1 - 1 - j0 < W || j1 <= G);
      for (int64_t r = 0; r < rows_p; ++r) {
        float* row = tb.sc + r * kBK;
        const int64_t i = i0 + r;
        int64_t lo = 0, hi = cw;
        if (r >= rows) {
          lo = cw;
          hi = 0;
        } else if (!full) {
          row_range(i, j0, j1, W, G, lo, hi);
          lo -= j0;
          hi -= j0;
        }
        if (lo >= hi) {  // nothing kept in this chunk
          tb.alpha[r] = 1.0f;
          tb.rlo[r] = int32_t(cw);
          tb.rhi[r] = 0;
          for (int64_t c = 0; c < cw; c += 8) _mm256_store_ps(row + c, _mm256_setzero_ps());
          continue;
        }
        tb.rlo[r] = int32_t(lo);
        tb.rhi[r] = int32_t(hi);
        if (full)
          softmax_row<false>(row, cw, 0, cw, i, j0, W, G, tb.m[r], tb.l[r], tb.alpha[r]);
        else
          softmax_row<true>(row, cw, lo, hi, i, j0, W, G, tb.m[r], tb.l[r], tb.alpha[r]);
      }
      // O = alpha·O + P·V, per 6-row tile over the union of its rows' kept keys. The 16-column slices
      // of O and V are the outer loop, so each V slice stays in L1 while the row tiles pass over it.
      int32_t tlo[kBQ / MR], thi[kBQ / MR];
      for (int64_t t = 0; t < tiles; ++t) {
        int32_t klo = int32_t(cw), khi = 0;
        for (int64_t r = t * MR; r < t * MR + MR; ++r) {
          klo = std::min(klo, tb.rlo[r]);
          khi = std::max(khi, tb.rhi[r]);
        }
        tlo[t] = klo;
        thi[t] = khi;
      }
      for (int64_t n = 0; n < Dp; n += NR)
        for (int64_t t = 0; t < tiles; ++t) {
          if (tlo[t] >= thi[t]) continue;  // every alpha is 1 and every p is 0
          pv_tile(thi[t] - tlo[t], tb.sc + t * MR * kBK + tlo[t], kBK, Vg + (j0 + tlo[t]) * ldv + n, ldv,
                  tb.ob + t * MR * Dp + n, Dp, tb.alpha + t * MR);
        }
    }
  }
  // Normalize and write out.
  for (int64_t r = 0; r < rows; ++r) {
    const float inv = 1.0f / tb.l[r];
    const float* src = tb.ob + r * Dp;
    float* dst = Oh + (i0 + r) * D;
    int64_t d = 0;
#if defined(__AVX512F__)
    const __m512 iz = _mm512_set1_ps(inv);
    for (; d + 16 <= D; d += 16) _mm512_storeu_ps(dst + d, _mm512_mul_ps(_mm512_load_ps(src + d), iz));
#endif
    const __m256 iv = _mm256_set1_ps(inv);
    for (; d + 8 <= D; d += 8) _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_loadu_ps(src + d), iv));
    for (; d < D; ++d) dst[d] = src[d] * inv;
  }
}

float* align_up(void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((u + 63) / 64 * 64);
}

}  // namespace

OB_DEFINE_ABI_VERSION()

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return scratch_bytes(shape_of(call), thread_count(call));
}

extern "C" int32_t ob_run(const ob_call* call) {
  const Shape s = shape_of(call);
  const float* Q = static_cast<const float*>(call->inputs[0].data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  const int64_t B = s.B, Hq = s.Hq, Hkv = s.Hkv, S = s.S, D = s.D, group = s.group;
  if (B * Hq * S * D == 0) return 0;
  const int32_t threads = thread_count(call);

  if (s.W == 0) {
    // S < 4: every pair is dropped, every score is -1e30, so each row is the plain mean of v.
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const float* Vh = V + (b * Hkv + h / group) * S * D;
        float* Oh = O + (b * Hq + h) * S * D;
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < S; ++j) acc += Vh[j * D + d];
          for (int64_t i = 0; i < S; ++i) Oh[i * D + d] = float(acc / double(S));
        }
      }
    return 0;
  }

  const uint64_t need = scratch_bytes(s, threads);
  void* heap = nullptr;
  void* scratch = call->workspace;
  if (scratch == nullptr || call->workspace_bytes < need) {
    heap = std::malloc(need);
    if (heap == nullptr) return 1;
    scratch = heap;
  }
  float* kt = align_up(scratch);
  float* vp = kt + kt_floats(s);
  float* thread_base = vp + vp_floats(s);
  const bool pad_v = s.D % NR != 0;
  const int64_t ldv = pad_v ? s.Dp : D;
  const int64_t slivers = s.Spad / NR;
  const int64_t nqb = (S + kBQ - 1) / kBQ;
  const int64_t tasks = B * Hkv * nqb;

#pragma omp parallel num_threads(threads)
  {
    // Pack K: for each (b, g), 16-key slivers of D x 16 (keys past S are zero).
#pragma omp for schedule(static)
    for (int64_t t = 0; t < B * Hkv * slivers; ++t) {
      const int64_t bg = t / slivers, sl = t % slivers;
      const float* src = K + bg * S * D;
      float* dst = kt + (bg * slivers + sl) * NR * D;
      const int64_t j0 = sl * NR;
      pack_k_sliver(std::min(NR, S - j0), D, src + j0 * D, D, dst);
    }
    if (pad_v) {
#pragma omp for schedule(static)
      for (int64_t t = 0; t < B * Hkv * S; ++t) {
        const float* src = V + t * D;
        float* dst = vp + t * s.Dp;
        for (int64_t d = 0; d < D; ++d) dst[d] = src[d];
        for (int64_t d = D; d < s.Dp; ++d) dst[d] = 0.0f;
      }
    }
    // implicit barrier of the omp for above

    float* base = thread_base + int64_t(omp_get_thread_num()) * thread_floats(s);
    ThreadBuf tb;
    tb.qp = base;
    tb.sc = tb.qp + round_up(kBQ * D + 64, 16);
    tb.ob = tb.sc + kBQ * kBK;
    tb.m = tb.ob + kBQ * s.Dp;
    tb.l = tb.m + round_up(kBQ, 16);
    tb.alpha = tb.l + round_up(kBQ, 16);
    tb.rlo = reinterpret_cast<int32_t*>(tb.alpha + round_up(kBQ, 16));
    tb.rhi = tb.rlo + round_up(kBQ, 16);

#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t qb = nqb - 1 - t % nqb;  // heaviest (latest) query blocks first
      const int64_t bg = t / nqb;
      const int64_t b = bg / Hkv, g = bg % Hkv;
      const int64_t i0 = qb * kBQ, i1 = std::min(S, i0 + kBQ);
      const float* Kt = kt + bg * slivers * NR * D;
      const float* Vg = pad_v ? vp + bg * S * s.Dp : V + bg * S * D;
      for (int64_t hh = 0; hh < group; ++hh) {
        const int64_t h = g * group + hh;
        attend_block(s, Q + (b * Hq + h) * S * D, Kt, Vg, ldv, O + (b * Hq + h) * S * D, i0, i1, tb);
      }
    }
  }
  std::free(heap);
  return 0;
}
