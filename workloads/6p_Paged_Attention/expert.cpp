// 6p_Paged_Attention expert: fused paged decode attention (flash-decoding style), AVX2/FMA or AVX-512,
// OpenMP.
//
// Work item: one sequence s and a group of KV_HEADS kv heads (all 8 by default). For each kv head of the
// group its G = Hq/Hkv query heads are processed together, so every K/V row is read from memory once:
//  - the G query rows are packed transposed into Qt (D × 8·⌈G/8⌉, heads on the vector lanes, zero
//    padded), pre-multiplied by D^-1/2·log2(e) so the softmax can use exp2;
//  - keys 0 .. kv_len-1 are walked in blocks of KV_BLOCK through the page table, rows read IN PLACE
//    (no gather, pages past kv_len never touched). With all kv heads in one item, a page slot's K (and
//    V) pieces of the group form one contiguous 4 KiB row, read whole;
//  - with PF_DIST > 0 the rows of the block PF_DIST ahead are software-prefetched into L2, a slice per kv
//    head, the K rows spread over the score tiles and the V rows over the P·V tiles (off by default: the
//    hardware prefetchers alone do better, see PF_DIST);
//  - scores S^T (keys × heads) by a register-blocked micro-kernel: 8 keys × 8 heads of ymm
//    accumulators, one broadcast of K[t][d] per key and one Qt load per d step;
//  - online softmax on the lanes (running max / sum per head, vectorized exp2, no horizontal ops);
//  - O (heads × D) += P·V by a micro-kernel of 4 heads × 24 d (one broadcast of P per head and key,
//    three V loads per key; the online-softmax correction applied when the tile is loaded), V rows in
//    place or, with PACK_V, first copied contiguous (rows 4 KiB apart alias to the same L1 sets);
//  - the result, divided by the running sum, is written to out[s, h, :].
// At x86-64-v4 both products use zmm (G = 8 heads on the lanes would fill half a zmm). With G <= 8 the
// scores use the quad layout (4 heads × 4 d values on the 16 lanes, the key's 4 d values broadcast to the
// four 128-bit lanes, one 9-op reduction per 4 keys; see qk_quad); with more heads, tiles of 4 keys ×
// 4 heads with d on the lanes reduced across all 16 lanes once per tile. P·V tiles are 4 heads × 64 d,
// masked loads for a D that is no multiple of 16.
// Measured on the 2-vCPU Zen 5 (2026-12-04, tools/paged-decode-driver, 1 thread): with the pages
// in L2 the quad layout does 32 GB/s of K/V against 27 for the 4×4 tiles (~1 FMA per cycle, both
// products about equal); from DRAM both are ~10 ms at the cpu size on 2 threads (26 GB/s, against
// 66 GB/s of streaming read). Prefetching 1-4 blocks ahead, into L1 or L2, changes nothing there; the same
// driver with the caches on 2 MiB pages (MADV_HUGEPAGE) took 8.6 ms instead of 10.2: each 4 KiB slot row
// is its own page, so every row costs a TLB walk and the hardware prefetchers stop at its end.
// Work items are ordered longest sequence first and scheduled dynamically over the threads (kv_lens
// are uniform in [1, L], so items differ by up to 2048×).
#include <opbench/kernel.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// Keys per online-softmax block (one score tile at 8; larger blocks amortize the rescale of the
// accumulators, smaller ones keep the rows of a kv head within the L1 ways).
// opbench:param KV_BLOCK 8 16 32
#ifndef KV_BLOCK
#define KV_BLOCK 16
#endif
// How many blocks ahead the K/V rows are software-prefetched into L2 (0: none, the hardware prefetchers
// alone). On the 2-vCPU Xeon (2026-12-07, tools/paged-decode-driver, cpu size from DRAM, 2 threads)
// every software prefetch tried cost time: at KV_BLOCK 8 whole rows 1 block ahead 16.4 ms, none 13.0;
// at KV_BLOCK 16 whole rows 1 block ahead 16.3, the first 1, 2 or 8 lines of each row 13.8-14.0,
// none 12.3-12.6; the same held at v3. On the Zen 5 it changed nothing (see the header).
// opbench:param PF_DIST 0 1 2
#ifndef PF_DIST
#define PF_DIST 0
#endif
// Copy each block's V rows of a kv head into a contiguous buffer before P·V (1) or read them in place (0):
// the rows of one kv head are Hkv·D floats (4 KiB) apart and alias to the same L1 sets, which costs once
// a block has more rows than the L1 has ways (12); blocks of 8 keys do best in place.
// opbench:param PACK_V 0 1
#ifndef PACK_V
#define PACK_V 0
#endif
// kv heads per work item: their K/V pieces of one page slot are adjacent, so with all of them (8 at the
// cpu size) every 4 KiB slot row of a page is read whole, once (far fewer TLB misses and DRAM pages per
// byte than 512 B pieces 4 KiB apart); 1 gives the most, smallest items.
// opbench:param KV_HEADS 1 8
#ifndef KV_HEADS
#define KV_HEADS 8
#endif
constexpr int QK_KEYS = 8;  // keys per score micro-tile (8 ymm accumulators)

#if !defined(__AVX2__) || !defined(__FMA__)
#error "needs AVX2 and FMA"
#endif

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int64_t KB = KV_BLOCK;
// Keys per score micro-tile by lane vectors NV (12 or fewer ymm accumulators).
template <int NV> constexpr int kKT = NV == 1 ? QK_KEYS : (NV == 2 ? 6 : 4);
constexpr int64_t KB_PAD = (KB + 15) / 16 * 16 + 16;  // rows of the score buffer (≥ KB rounded up to KT)
constexpr float kNeg = -1e30f;

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// 2^x for x in [-127, 0] (every argument here is a score minus a running max): Cephes exp2f range
// reduction and its polynomial less the f^6 term, relative error < 3e-6; x <= -127 gives exactly 0.
static inline __m256 exp2_ps(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-127.0f));
  const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(x, n);
  __m256 p = _mm256_set1_ps(1.339887440266574e-3f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.618437357674640e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550332471162809e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.402264791363012e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.931472028550421e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#ifndef PF_HINT
#define PF_HINT _MM_HINT_T1  // into L2: the L1 miss buffers stay free for the demand loads
#endif
static inline void prefetch_row(const float* row, int64_t bytes) {
  const char* p = reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(row) & ~uintptr_t(63));
  const char* end = reinterpret_cast<const char*>(row) + bytes;
  for (; p < end; p += 64) _mm_prefetch(p, PF_HINT);
}

// St[i][m0 .. m0+8·NV) = Σ_d K_i[d] · Qt[d][m0 ..] for the KTT keys whose rows are kr[0 .. KTT) + hoff.
template <int KTT, int NV>
static inline void qk_tile(const float* const* kr, int64_t hoff, const float* __restrict qt, int64_t ldq,
                           int64_t D, float* __restrict st, int64_t lds) {
  __m256 acc[KTT][NV];
  const float* r[KTT];
#pragma GCC unroll 16
  for (int i = 0; i < KTT; ++i) {
    r[i] = kr[i] + hoff;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
  }
#pragma GCC unroll 2
  for (int64_t d = 0; d < D; ++d) {
    __m256 q[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) q[v] = _mm256_load_ps(qt + d * ldq + 8 * v);
#pragma GCC unroll 16
    for (int i = 0; i < KTT; ++i) {
      const __m256 b = _mm256_broadcast_ss(r[i] + d);
      if constexpr (KTT * NV + NV + 1 >= 16) {
        // No register left for the NV query vectors (GCC would spill accumulators): read them as FMA
        // memory operands, the empty asm keeps GCC from merging the loads into registers.
        const float* qd = qt + d * ldq;
        asm volatile("" : "+r"(qd));
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(b, _mm256_load_ps(qd + 8 * v), acc[i][v]);
      } else {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(b, q[v], acc[i][v]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < KTT; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm256_store_ps(st + i * lds + 8 * v, acc[i][v]);
}

// O[h][d0 + 8c] = alpha[h]·O[h][d0 + 8c] + Σ_t Pt[t][h] · V_t[d0 + 8c] for HT heads × CT vectors of d,
// V_t = vr[t] + hoff (O row-major, heads × D: the P·V product with the d values on the lanes, one
// broadcast of P per head and key, CT V loads per key).
template <int HT, int CT>
static inline void pv_rows(const float* const* vr, int64_t hoff, int64_t n, const float* __restrict pt, int64_t ldp,
                           float* __restrict o, int64_t ldo, const float* alpha, bool first, int64_t d0) {
  __m256 acc[HT][CT];
#pragma GCC unroll 8
  for (int h = 0; h < HT; ++h) {
    const __m256 a = _mm256_broadcast_ss(alpha + h);
#pragma GCC unroll 8
    for (int c = 0; c < CT; ++c)
      acc[h][c] = first ? _mm256_setzero_ps() : _mm256_mul_ps(_mm256_loadu_ps(o + h * ldo + 8 * c), a);
  }
  for (int64_t t = 0; t < n; ++t) {
    const float* row = vr[t] + hoff + d0;
    __m256 v[CT];
#pragma GCC unroll 8
    for (int c = 0; c < CT; ++c) v[c] = _mm256_loadu_ps(row + 8 * c);
#pragma GCC unroll 8
    for (int h = 0; h < HT; ++h) {
      const __m256 b = _mm256_broadcast_ss(pt + t * ldp + h);
#pragma GCC unroll 8
      for (int c = 0; c < CT; ++c) acc[h][c] = _mm256_fmadd_ps(b, v[c], acc[h][c]);
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < HT; ++h)
#pragma GCC unroll 8
    for (int c = 0; c < CT; ++c) _mm256_storeu_ps(o + h * ldo + 8 * c, acc[h][c]);
}

#if defined(__AVX512F__)
// At x86-64-v4 the score and P·V products use zmm with the d values on the lanes (heads on the lanes
// would fill only 8 of 16 at G = 8): the score tile is 4 keys × 4 heads of 16 accumulators over the
// D/16 chunks of a row, reduced across the lanes once at the end; a ragged D reads its last chunk with
// a mask (the packed queries and accumulators are zero padded to Dp = D rounded up to 16).
constexpr bool kZmm = true;
constexpr int QK4 = 4;  // keys (and heads) per zmm score tile

// Lane k of the result = the sum of the 16 lanes of a[k] (a transposing add tree: 30 shuffles, 15 adds).
static inline __m512 sum_lanes16(const __m512* a) {
  __m512 b[8], c[4];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p)  // per 128-bit lane: [x, y, x, y] of a[2p], a[2p+1]
    b[p] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * p], a[2 * p + 1]), _mm512_unpackhi_ps(a[2 * p], a[2 * p + 1]));
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)  // per 128-bit lane: a[4r .. 4r+3] partial sums
    c[r] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * r], b[2 * r + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(b[2 * r], b[2 * r + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 d0 = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 d1 = _mm512_add_ps(_mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d0, d1, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(d0, d1, _MM_SHUFFLE(3, 1, 3, 1)));
}

// St[i][j] = Σ_d K_i[d] · Q_j[d] for the 4 keys kr[0 .. 4) + hoff and the 4 packed query rows
// q + j·ldq (row-major, zero padded to a multiple of 16), St rows lds apart.
static inline void qk_tile_zmm(const float* const* kr, int64_t hoff, const float* __restrict q, int64_t ldq,
                               int64_t D, float* __restrict st, int64_t lds) {
  __m512 acc[QK4 * QK4];
  const float* r[QK4];
#pragma GCC unroll 4
  for (int i = 0; i < QK4; ++i) r[i] = kr[i] + hoff;
#pragma GCC unroll 16
  for (int k = 0; k < QK4 * QK4; ++k) acc[k] = _mm512_setzero_ps();
  auto step = [&](int64_t d, __mmask16 m) {
    __m512 kv[QK4];
#pragma GCC unroll 4
    for (int i = 0; i < QK4; ++i) kv[i] = _mm512_maskz_loadu_ps(m, r[i] + d);
#pragma GCC unroll 4
    for (int j = 0; j < QK4; ++j) {
      const __m512 qv = _mm512_load_ps(q + j * ldq + d);
#pragma GCC unroll 4
      for (int i = 0; i < QK4; ++i) acc[i * QK4 + j] = _mm512_fmadd_ps(kv[i], qv, acc[i * QK4 + j]);
    }
  };
  int64_t d = 0;
#pragma GCC unroll 2
  for (; d + 16 <= D; d += 16) step(d, 0xFFFF);
  if (d < D) step(d, __mmask16((1u << (D - d)) - 1));
  const __m512 s = sum_lanes16(acc);  // 128-bit lane i: key i, heads 0 .. 3
  _mm_storeu_ps(st, _mm512_extractf32x4_ps(s, 0));
  _mm_storeu_ps(st + lds, _mm512_extractf32x4_ps(s, 1));
  _mm_storeu_ps(st + 2 * lds, _mm512_extractf32x4_ps(s, 2));
  _mm_storeu_ps(st + 3 * lds, _mm512_extractf32x4_ps(s, 3));
}

// 2^x on 16 lanes, as exp2_ps.
static inline __m512 exp2_ps512(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-127.0f));
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.339887440266574e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618437357674640e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550332471162809e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402264791363012e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931472028550421e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

// The quad layout (G <= 8 query heads per kv head, the cpu size's G = 8): the score product is done with
// 4 d values × 4 heads on the 16 lanes, so no lane is idle and no per-dot reduction is needed. For a
// group a of 4 heads (4a .. 4a+3) and a step s of 4 d values, the packed queries hold
//   qq[(a·S4 + s)·16 + 4i + p] = Q[4a + i][4s + p]        (S4 = ⌈D/4⌉, zero past G and D)
// and the key operand is K_t[4s .. 4s+3] broadcast to the four 128-bit lanes (one vbroadcastf32x4 from
// memory, a load-port op). An accumulator per (key, group) sums 4 partial dots per head; four of them
// reduce to one vector with 6 shuffles and 3 adds, giving the scores of a key quad q (keys 4q .. 4q+3):
//   lane 4i + k of P[q·32 + a·16 ..] = score(key 4q + k, head 4a + i),
// so P[t][h] sits at (t/4)·32 + 4h + t mod 4, and the online-softmax state (running max, sum, alpha)
// of head h at lane 4h of a 32-float row (each head's value on its 4 lanes).
// One (key quad, group) vector: 128-bit lane i = [a, b, c, d] summed over their 4 lanes of lane i.
static inline __m512 reduce_quads(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_ps(c, d, 0x44), _mm512_shuffle_ps(c, d, 0xEE));
  return _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x88), _mm512_shuffle_ps(ab, cd, 0xDD));
}

// Scores of the KT (4 or 8) keys kr[0 .. KT) + hoff against the packed queries qq, into KT/4 key quads
// of P (32 floats each).
template <int KT>
static inline void qk_quad(const float* const* kr, int64_t hoff, const float* __restrict qq, int64_t D,
                           float* __restrict p) {
  __m512 a[KT], b[KT];
  const float* r[KT];
#pragma GCC unroll 8
  for (int i = 0; i < KT; ++i) {
    r[i] = kr[i] + hoff;
    a[i] = _mm512_setzero_ps();
    b[i] = _mm512_setzero_ps();
  }
  const int64_t S4 = (D + 3) / 4;
  const float* qb = qq + S4 * 16;
  int64_t s = 0;
#pragma GCC unroll 2
  for (; 4 * s + 4 <= D; ++s) {
    const __m512 qa = _mm512_load_ps(qq + 16 * s), qv = _mm512_load_ps(qb + 16 * s);
#pragma GCC unroll 8
    for (int i = 0; i < KT; ++i) {
      const __m512 k = _mm512_broadcast_f32x4(_mm_loadu_ps(r[i] + 4 * s));
      a[i] = _mm512_fmadd_ps(k, qa, a[i]);
      b[i] = _mm512_fmadd_ps(k, qv, b[i]);
    }
  }
  if (4 * s < D) {  // the last 1-3 d values, read with a mask (the row may end at a guard page)
    const __mmask8 m = __mmask8((1u << (D - 4 * s)) - 1);
    const __m512 qa = _mm512_load_ps(qq + 16 * s), qv = _mm512_load_ps(qb + 16 * s);
#pragma GCC unroll 8
    for (int i = 0; i < KT; ++i) {
      const __m512 k = _mm512_broadcast_f32x4(_mm_maskz_loadu_ps(m, r[i] + 4 * s));
      a[i] = _mm512_fmadd_ps(k, qa, a[i]);
      b[i] = _mm512_fmadd_ps(k, qv, b[i]);
    }
  }
#pragma GCC unroll 2
  for (int q = 0; q < KT / 4; ++q) {
    _mm512_store_ps(p + 32 * q, reduce_quads(a[4 * q], a[4 * q + 1], a[4 * q + 2], a[4 * q + 3]));
    _mm512_store_ps(p + 32 * q + 16, reduce_quads(b[4 * q], b[4 * q + 1], b[4 * q + 2], b[4 * q + 3]));
  }
}

// Online softmax of one block of n keys in the quad layout, on the lanes: P becomes exp2(S - max) (keys
// past n exactly 0), the running max / sum and alpha rows (32 floats, lane 4h) updated.
static inline void softmax_quad(float* p, int64_t n, float* mrow, float* lrow, float* alpha) {
  const int64_t nq = (n + 3) / 4;
  const __m512 neg = _mm512_set1_ps(kNeg);
  for (int a = 0; a < 2; ++a) {
    const __m512 mold = _mm512_load_ps(mrow + 16 * a);
    __m512 mx = mold;
    for (int64_t q = 0; q < nq; ++q) {
      float* pq = p + 32 * q + 16 * a;
      __m512 x = _mm512_load_ps(pq);
      if (4 * q + 4 > n) {  // keys 4q + k >= n: lanes with k >= n - 4q
        const __mmask16 valid = __mmask16(((1u << (n - 4 * q)) - 1) * 0x1111u);
        x = _mm512_mask_blend_ps(valid, neg, x);
        _mm512_store_ps(pq, x);
      }
      mx = _mm512_max_ps(mx, x);
    }
    mx = _mm512_max_ps(mx, _mm512_permute_ps(mx, 0xB1));  // max over the 4 lanes of each head
    mx = _mm512_max_ps(mx, _mm512_permute_ps(mx, 0x4E));
    const __m512 al = exp2_ps512(_mm512_sub_ps(mold, mx));
    __m512 sum = _mm512_setzero_ps();
    for (int64_t q = 0; q < nq; ++q) {
      float* pq = p + 32 * q + 16 * a;
      const __m512 e = exp2_ps512(_mm512_sub_ps(_mm512_load_ps(pq), mx));
      _mm512_store_ps(pq, e);
      sum = _mm512_add_ps(sum, e);
    }
    sum = _mm512_add_ps(sum, _mm512_permute_ps(sum, 0xB1));
    sum = _mm512_add_ps(sum, _mm512_permute_ps(sum, 0x4E));
    _mm512_store_ps(lrow + 16 * a, _mm512_fmadd_ps(_mm512_load_ps(lrow + 16 * a), al, sum));
    _mm512_store_ps(mrow + 16 * a, mx);
    _mm512_store_ps(alpha + 16 * a, al);
  }
}

// O[h][d0 + 16c] = alpha[h]·O[h][..] + Σ_t Pt[t][h] · V_t[d0 + 16c] for HT heads × CT zmm of d (O rows
// zero padded to a multiple of 16; the last V vector read with the mask `last`).
// QUAD: P and alpha in the quad layout (P[t][h] at (t/4)·32 + 4h + t mod 4, alpha[h] at 4h; pt and alpha
// point at head h0's entries), else P rows ldp apart and alpha dense.
template <int HT, int CT, bool QUAD = false>
static inline void pv_rows_zmm(const float* const* vr, int64_t hoff, int64_t n, const float* __restrict pt,
                               int64_t ldp, float* __restrict o, int64_t ldo, const float* alpha, bool first,
                               int64_t d0, __mmask16 last) {
  __m512 acc[HT][CT];
#pragma GCC unroll 8
  for (int h = 0; h < HT; ++h) {
    const __m512 a = _mm512_set1_ps(alpha[QUAD ? 4 * h : h]);
#pragma GCC unroll 8
    for (int c = 0; c < CT; ++c)
      acc[h][c] = first ? _mm512_setzero_ps() : _mm512_mul_ps(_mm512_load_ps(o + h * ldo + 16 * c), a);
  }
  for (int64_t t = 0; t < n; ++t) {
    const float* row = vr[t] + hoff + d0;
    __m512 v[CT];
#pragma GCC unroll 8
    for (int c = 0; c < CT; ++c) v[c] = _mm512_maskz_loadu_ps(c == CT - 1 ? last : __mmask16(0xFFFF), row + 16 * c);
    const float* pr = QUAD ? pt + (t >> 2) * 32 + (t & 3) : pt + t * ldp;
#pragma GCC unroll 8
    for (int h = 0; h < HT; ++h) {
      const __m512 b = _mm512_set1_ps(pr[QUAD ? 4 * h : h]);
#pragma GCC unroll 8
      for (int c = 0; c < CT; ++c) acc[h][c] = _mm512_fmadd_ps(b, v[c], acc[h][c]);
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < HT; ++h)
#pragma GCC unroll 8
    for (int c = 0; c < CT; ++c) _mm512_store_ps(o + h * ldo + 16 * c, acc[h][c]);
}
#else
constexpr bool kZmm = false;
#endif

struct Geometry {
  int64_t D, G, PS;
  int64_t slot_stride, page_stride;  // floats between consecutive slots / pages of one cache
};

// Per kv head of a group: its packed queries, accumulators and online-softmax state.
struct HeadState {
  float* qt;     // D × Mp (at v4 Mp × Dp: one zero-padded row per query head)
  float* ot;     // Mp × D (at v4 Mp × Dp): the accumulators, one row per query head (padding heads included)
  float* mrow;   // Mp running max (log2 domain)
  float* lrow;   // Mp running sum
  float* alpha;  // Mp correction of the current block
};

struct Scratch {
  HeadState head[KV_HEADS];
  float* st;           // KB_PAD × Mp
  const float** krow;  // KB_PAD: K rows of the group's first kv head
  const float** vrow;  // KB_PAD
  const float** prow;  // KB: K rows of the block being prefetched (V row = K row + vdelta)
  const float** vpk;   // KB_PAD: rows of vpack
  float* vpack;        // KB_PAD × D: one kv head's V rows of the block, contiguous
};

// Floats of a packed query or accumulator row: D, or D rounded up to a whole zmm at v4.
int64_t d_pad(int64_t D) { return kZmm ? round_up(D, 16) : D; }

// Floats of one online-softmax state row (max, sum or alpha): Mp, or 4 per head in the quad layout.
int64_t state_floats(int64_t Mp) { return round_up(4 * Mp, 16); }

int64_t head_floats(int64_t D, int64_t Mp) {
  return 2 * round_up(d_pad(D) * Mp, 16) + 3 * state_floats(Mp);
}

int64_t scratch_floats(int64_t D, int64_t Mp) {
  return KV_HEADS * head_floats(D, Mp) + round_up(KB_PAD * Mp, 16) + round_up(4 * KB_PAD * 2, 16) +
         round_up(KB_PAD * D, 16);
}

Scratch carve(float* base, int64_t D, int64_t Mp) {
  Scratch w;
  for (int j = 0; j < KV_HEADS; ++j) {
    HeadState& h = w.head[j];
    h.qt = base; base += round_up(d_pad(D) * Mp, 16);
    h.ot = base; base += round_up(Mp * d_pad(D), 16);
    h.mrow = base; base += state_floats(Mp);
    h.lrow = base; base += state_floats(Mp);
    h.alpha = base; base += state_floats(Mp);
  }
  w.st = base; base += round_up(KB_PAD * Mp, 16);
  w.krow = reinterpret_cast<const float**>(base);
  w.vrow = w.krow + KB_PAD;
  w.prow = w.vrow + KB_PAD;
  w.vpk = w.prow + KB_PAD;
  base += round_up(4 * KB_PAD * 2, 16);
  w.vpack = base;
  for (int64_t t = 0; t < KB_PAD; ++t) w.vpk[t] = w.vpack + t * D;
  return w;
}

// Online softmax of one block on the lanes: St (n × Mp) becomes P, running max / sum updated, alpha set.
template <int NV>
inline void softmax_block(float* st, int64_t n, const HeadState& h) {
  constexpr int64_t Mp = 8 * NV;
  for (int64_t v = 0; v < NV; ++v) {
    float* sv = st + 8 * v;
    const __m256 mold = _mm256_load_ps(h.mrow + 8 * v);
    __m256 mx0 = mold, mx1 = mold;
    int64_t t = 0;
    for (; t + 1 < n; t += 2) {
      mx0 = _mm256_max_ps(mx0, _mm256_load_ps(sv + t * Mp));
      mx1 = _mm256_max_ps(mx1, _mm256_load_ps(sv + (t + 1) * Mp));
    }
    if (t < n) mx0 = _mm256_max_ps(mx0, _mm256_load_ps(sv + t * Mp));
    const __m256 mx = _mm256_max_ps(mx0, mx1);
    const __m256 alpha = exp2_ps(_mm256_sub_ps(mold, mx));
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    for (t = 0; t + 1 < n; t += 2) {
      const __m256 p0 = exp2_ps(_mm256_sub_ps(_mm256_load_ps(sv + t * Mp), mx));
      const __m256 p1 = exp2_ps(_mm256_sub_ps(_mm256_load_ps(sv + (t + 1) * Mp), mx));
      _mm256_store_ps(sv + t * Mp, p0);
      _mm256_store_ps(sv + (t + 1) * Mp, p1);
      s0 = _mm256_add_ps(s0, p0);
      s1 = _mm256_add_ps(s1, p1);
    }
    if (t < n) {
      const __m256 p0 = exp2_ps(_mm256_sub_ps(_mm256_load_ps(sv + t * Mp), mx));
      _mm256_store_ps(sv + t * Mp, p0);
      s0 = _mm256_add_ps(s0, p0);
    }
    const __m256 l = _mm256_fmadd_ps(_mm256_load_ps(h.lrow + 8 * v), alpha, _mm256_add_ps(s0, s1));
    _mm256_store_ps(h.lrow + 8 * v, l);
    _mm256_store_ps(h.mrow + 8 * v, mx);
    _mm256_store_ps(h.alpha + 8 * v, alpha);
  }
}

// One (sequence, group of nh kv heads) of decode: for kv head j of the group, the G query rows
// q + j·G·D (G × D) against keys 0 .. n_keys-1 of the sequence (page table ptab; K row of head j =
// row of the group's first head + j·D), output rows o + j·G·D.
template <int NV>
void decode_item(const Geometry& geo, const Scratch& w, int64_t nh, const float* q, float* o,
                 const float* kbase, const float* vbase, const int32_t* ptab, int64_t n_keys, float qscale) {
  const int64_t D = geo.D, G = geo.G, PS = geo.PS;
  constexpr int64_t KT = kZmm ? 4 : kKT<NV>;
  constexpr int64_t Mp = 8 * NV;
  constexpr bool quad = kZmm && NV == 1;  // the quad layout (G <= 8) at v4
  const int64_t Dp = d_pad(D);
  const int64_t vdelta = vbase - kbase;
  for (int64_t j = 0; j < nh; ++j) {
    const HeadState& h = w.head[j];
    const float* qj = q + j * G * D;
    if (quad) {  // the quad layout: group a, step s, lane 4i + p = Q[4a + i][4s + p]
      const int64_t S4 = (D + 3) / 4;
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t st = 0; st < S4; ++st)
          for (int64_t l = 0; l < 16; ++l) {
            const int64_t m = 4 * a + l / 4, d = 4 * st + l % 4;
            h.qt[(a * S4 + st) * 16 + l] = m < G && d < D ? qj[m * D + d] * qscale : 0.0f;
          }
    } else if (kZmm) {  // Q (Mp × Dp), one zero-padded row per head
      for (int64_t m = 0; m < Mp; ++m)
        for (int64_t d = 0; d < Dp; ++d) h.qt[m * Dp + d] = m < G && d < D ? qj[m * D + d] * qscale : 0.0f;
    } else {  // Qt (D × Mp), heads on the lanes, zero padded
      for (int64_t d = 0; d < D; ++d)
        for (int64_t m = 0; m < Mp; ++m) h.qt[d * Mp + m] = m < G ? qj[m * D + d] * qscale : 0.0f;
    }
    for (int64_t m = 0; m < state_floats(Mp); ++m) {
      h.mrow[m] = kNeg;
      h.lrow[m] = 0.0f;
    }
  }
  const int64_t row_bytes = nh * D * int64_t(sizeof(float));  // the group's K (or V) piece of one slot
  auto row_of = [&](int64_t page_slot, int64_t slot) {
    return kbase + int64_t(ptab[page_slot]) * geo.page_stride + slot * geo.slot_stride;
  };
  if (PF_DIST > 0) {  // the first blocks: issue their misses together
    const int64_t n0 = std::min<int64_t>(n_keys, KB * PF_DIST);
    for (int64_t t = 0; t < n0; ++t) {
      const float* r = row_of(t / PS, t % PS);
      prefetch_row(r, row_bytes);
      prefetch_row(r + vdelta, row_bytes);
    }
  }
  int64_t pg = 0, sl = 0;  // page and slot of the block's first key
  bool first = true;
  for (int64_t t0 = 0; t0 < n_keys; t0 += KB) {
    const int64_t n = std::min<int64_t>(KB, n_keys - t0);
    const int64_t ntile = round_up(n, KT);
    for (int64_t t = 0; t < n; ++t) {
      const float* r = row_of(pg, sl);
      w.krow[t] = r;
      w.vrow[t] = r + vdelta;
      if (++sl == PS) {
        sl = 0;
        ++pg;
      }
    }
    for (int64_t t = n; t < ntile; ++t) w.krow[t] = w.krow[n - 1];
    // Rows of the block PF_DIST ahead, prefetched spread over the score tiles of the first head.
    int64_t np = 0;
    if (PF_DIST > 0) {
      const int64_t tp = t0 + PF_DIST * KB;
      if (tp < n_keys) {
        np = std::min<int64_t>(KB, n_keys - tp);
        int64_t ppg = tp / PS, psl = tp % PS;
        for (int64_t t = 0; t < np; ++t) {
          w.prow[t] = row_of(ppg, psl);
          if (++psl == PS) {
            psl = 0;
            ++ppg;
          }
        }
      }
    }
    for (int64_t j = 0; j < nh; ++j) {
      const HeadState& h = w.head[j];
      const int64_t hoff = j * D;
      // Scores (log2 domain): St[t][m].
      // The next block's rows are prefetched a slice per kv head of the group ([p_lo, p_hi)), the K rows
      // spread over the score tiles, the V rows over the P·V tiles.
      const int64_t p_lo = np * j / nh, p_hi = np * (j + 1) / nh;
      const int64_t n_qk = ntile / KT;
      int64_t pk = p_lo;
      for (int64_t kt = 0; kt < ntile;) {
        int64_t kt_next = kt + KT;
#if defined(__AVX512F__)
        if constexpr (quad) {  // 8 keys per tile (16 accumulators), 4 for the rest of the block
          if (kt + 8 <= ntile) {
            qk_quad<8>(w.krow + kt, hoff, h.qt, D, w.st + kt * 8);
            kt_next = kt + 8;
          } else {
            qk_quad<4>(w.krow + kt, hoff, h.qt, D, w.st + kt * 8);
          }
        } else {
          for (int64_t h0 = 0; h0 < Mp; h0 += 4)
            qk_tile_zmm(w.krow + kt, hoff, h.qt + h0 * Dp, Dp, D, w.st + kt * Mp + h0, Mp);
        }
#else
        qk_tile<KT, NV>(w.krow + kt, hoff, h.qt, Mp, D, w.st + kt * Mp, Mp);
#endif
        kt = kt_next;
        const int64_t upto = p_lo + (p_hi - p_lo) * (kt / KT) / n_qk;
        for (; pk < upto; ++pk) prefetch_row(w.prow[pk], row_bytes);
      }
#if defined(__AVX512F__)
      if constexpr (quad)
        softmax_quad(w.st, n, h.mrow, h.lrow, h.alpha);
      else
#endif
        softmax_block<NV>(w.st, n, h);
      // The V rows of one kv head sit 4 KiB apart (Hkv·D floats): they all map to the same few L1 sets, and
      // the P·V tiles, which walk the keys at a fixed d, would miss on every row. Read them once into a
      // contiguous buffer (PACK_V), or use them in place.
      const float* const* vr = w.vrow;
      int64_t vo = hoff;
      if (PACK_V) {
        for (int64_t t = 0; t < n; ++t) {
          const float* src = w.vrow[t] + hoff;
          float* dst = w.vpack + t * D;
          int64_t d = 0;
          for (; d + 8 <= D; d += 8) _mm256_storeu_ps(dst + d, _mm256_loadu_ps(src + d));
          for (; d < D; ++d) dst[d] = src[d];
        }
        vr = w.vpk;
        vo = 0;
      }
      // O^T += V^T P^T.
      // O += P·V: 4 heads × 24 d per tile (4 × 16 and 4 × 8 for the rest of D), scalar for D mod 8.
      // (The next block's V rows are prefetched spread over the P·V tiles of the first head.)
      const int64_t pv_calls = Mp / 4 * (kZmm ? (D + 63) / 64 : (D + 23) / 24);
      int64_t pv_call = 0, pf_next = p_lo;
      auto pf_v = [&]() {
        const int64_t upto = std::min(p_hi, p_lo + (p_hi - p_lo) * ++pv_call / pv_calls);
        for (; pf_next < upto; ++pf_next) prefetch_row(w.prow[pf_next] + vdelta, row_bytes);
      };
#if defined(__AVX512F__)
      // 4 heads × 64 d per tile (4 zmm of V per key), the rest of D in one tile of 1-3 zmm.
      const int64_t nc = Dp / 16;
      const __mmask16 tail = D % 16 ? __mmask16((1u << (D % 16)) - 1) : __mmask16(0xFFFF);
      for (int64_t h0 = 0; h0 < Mp; h0 += 4) {
        float* oh = h.ot + h0 * Dp;
        const float* pt = w.st + (quad ? 4 : 1) * h0;
        const float* al = h.alpha + (quad ? 4 : 1) * h0;
        int64_t c0 = 0;
        for (; c0 + 4 <= nc; c0 += 4) {
          pv_rows_zmm<4, 4, quad>(vr, vo, n, pt, Mp, oh + 16 * c0, Dp, al, first, 16 * c0,
                                  c0 + 4 == nc ? tail : 0xFFFF);
          pf_v();
        }
        switch (nc - c0) {
          case 3: pv_rows_zmm<4, 3, quad>(vr, vo, n, pt, Mp, oh + 16 * c0, Dp, al, first, 16 * c0, tail); pf_v(); break;
          case 2: pv_rows_zmm<4, 2, quad>(vr, vo, n, pt, Mp, oh + 16 * c0, Dp, al, first, 16 * c0, tail); pf_v(); break;
          case 1: pv_rows_zmm<4, 1, quad>(vr, vo, n, pt, Mp, oh + 16 * c0, Dp, al, first, 16 * c0, tail); pf_v(); break;
          default: break;
        }
      }
#else
      for (int64_t h0 = 0; h0 < Mp; h0 += 4) {
        float* oh = h.ot + h0 * D;
        const float* pt = w.st + h0;
        const float* al = h.alpha + h0;
        int64_t d0 = 0;
        const int64_t end24 = (D / 8) % 3 == 1 && D / 8 >= 4 ? (D / 8 - 4) * 8 : D / 24 * 24;
        for (; d0 < end24; d0 += 24) {
          pv_rows<4, 3>(vr, vo, n, pt, Mp, oh + d0, D, al, first, d0);
          pf_v();
        }
        for (; d0 + 16 <= D; d0 += 16) {
          pv_rows<4, 2>(vr, vo, n, pt, Mp, oh + d0, D, al, first, d0);
          pf_v();
        }
        for (; d0 + 8 <= D; d0 += 8) {
          pv_rows<4, 1>(vr, vo, n, pt, Mp, oh + d0, D, al, first, d0);
          pf_v();
        }
        for (; d0 < D; ++d0)
          for (int64_t hh = 0; hh < 4; ++hh) {
            float acc = first ? 0.0f : oh[hh * D + d0] * al[hh];
            for (int64_t t = 0; t < n; ++t) acc += pt[t * Mp + hh] * vr[t][vo + d0];
            oh[hh * D + d0] = acc;
          }
      }
#endif
      for (; pf_next < p_hi; ++pf_next) prefetch_row(w.prow[pf_next] + vdelta, row_bytes);
    }
    first = false;
  }
  // out[h][d] = O[h][d] / l[h].
  for (int64_t j = 0; j < nh; ++j) {
    const HeadState& h = w.head[j];
    for (int64_t m = 0; m < G; ++m) {
      const float inv = 1.0f / h.lrow[quad ? 4 * m : m];
      float* orow = o + (j * G + m) * D;
      for (int64_t d = 0; d < D; ++d) orow[d] = h.ot[m * Dp + d] * inv;
    }
  }
}

int64_t lanes_for(int64_t G) { return round_up(G, 8); }

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kp = call->inputs[1];
  const int64_t Hq = q.shape[1], D = q.shape[2], Hkv = kp.shape[2];
  const int64_t N = q.shape[0];
  const int64_t Mp = lanes_for(Hq / Hkv);
  return uint64_t(call->num_threads) * uint64_t(scratch_floats(D, Mp)) * sizeof(float) +
         uint64_t(N * Hkv + 16) * sizeof(int64_t) + 128;
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kp = call->inputs[1];
  const int64_t N = q.shape[0], Hq = q.shape[1], D = q.shape[2];
  const int64_t PS = kp.shape[1], Hkv = kp.shape[2], PPS = call->inputs[4].shape[1];
  const int64_t G = Hq / Hkv, L = PS * PPS;
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(kp.data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  const int32_t* kv_lens = static_cast<const int32_t*>(call->inputs[3].data);
  const int32_t* pages = static_cast<const int32_t*>(call->inputs[4].data);
  const int32_t* cu_q_lens = static_cast<const int32_t*>(call->inputs[5].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  const float qscale = float(1.4426950408889634 / std::sqrt(double(D)));  // D^-1/2 · log2(e)

  const Geometry geo{D, G, PS, Hkv * D, PS * Hkv * D};
  const int64_t Mp = lanes_for(G);
  const int64_t per_thread = scratch_floats(D, Mp);
  const int nt = std::max(1, int(call->num_threads));

  // Work items (s, group of KV_HEADS kv heads), longest sequence first.
  const int64_t groups = (Hkv + KV_HEADS - 1) / KV_HEADS;
  const int64_t items = N * groups;
  char* ws = static_cast<char*>(call->workspace);
  float* thread_base = reinterpret_cast<float*>(ws);
  int64_t* order = reinterpret_cast<int64_t*>(ws + uint64_t(nt) * uint64_t(per_thread) * sizeof(float));
  for (int64_t i = 0; i < items; ++i) order[i] = i;
  std::stable_sort(order, order + items,
                   [&](int64_t a, int64_t b) { return kv_lens[a / groups] > kv_lens[b / groups]; });

#pragma omp parallel num_threads(nt)
  {
    const Scratch w = carve(thread_base + int64_t(omp_get_thread_num()) * per_thread, D, Mp);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < items; ++it) {
      const int64_t s = order[it] / groups, g0 = order[it] % groups * KV_HEADS;
      const int64_t nh = std::min<int64_t>(KV_HEADS, Hkv - g0);
      const float* qs = Q + (int64_t(cu_q_lens[s]) * Hq + g0 * G) * D;
      float* os = O + (s * Hq + g0 * G) * D;
      const int64_t n_keys = std::min<int64_t>(kv_lens[s], L);
      if (n_keys <= 0) {
        std::memset(os, 0, size_t(nh * G * D) * sizeof(float));
        continue;
      }
      const float* kb = K + g0 * D;
      const float* vb = V + g0 * D;
      const int32_t* ptab = pages + s * PPS;
      if (Mp == 8)
        decode_item<1>(geo, w, nh, qs, os, kb, vb, ptab, n_keys, qscale);
      else if (Mp == 16)
        decode_item<2>(geo, w, nh, qs, os, kb, vb, ptab, n_keys, qscale);
      else
        // G > 16: one kv head at a time, its query heads in groups of 16.
        for (int64_t j = 0; j < nh; ++j)
          for (int64_t h0 = 0; h0 < G; h0 += 16) {
            Geometry sub = geo;
            sub.G = std::min<int64_t>(16, G - h0);
            decode_item<2>(sub, w, 1, qs + (j * G + h0) * D, os + (j * G + h0) * D, kb + j * D, vb + j * D, ptab,
                           n_keys, qscale);
          }
    }
  }
  return 0;
}
