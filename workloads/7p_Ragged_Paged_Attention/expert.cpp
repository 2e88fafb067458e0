// 7p_Ragged_Paged_Attention expert: fused ragged paged attention (flash attention over the page table),
// AVX2/FMA + OpenMP, no gather of the sequence.
//
// Work items: (active sequence i, kv head g, block of Q_TOKENS query tokens). A decode is one item of one
// token; a prefill chunk is split into query blocks. Per item, the M = tokens·G query rows (token, head of
// the group) are packed transposed into Qt (query rows on the vector lanes, in lane tiles of 8·NV rows, D
// × 8·NV each), pre-multiplied by D^-1/2·log2(e). Then, for each block of KV_BLOCK keys up to the causal
// limit of the item's last token (key blocks past it are never touched):
//  - the block's K/V rows are located through the page table (pages past kv_len never touched); with
//    PF_DIST > 0 the rows of the next block are software-prefetched;
//  - the rows of one kv head sit 4 KiB apart in the cache, so they all alias to the same few L1 sets:
//    with PACK_KV the block's V rows (and, when several lane tiles reuse it, its K rows) are read once into
//    an L1-sized contiguous buffer (KV_BLOCK rows, not the whole sequence);
//  - per lane tile, only up to the keys its last token sees: S^T = K·Qt by a register-blocked micro-kernel
//    (KT keys × 8·NV rows of ymm accumulators: one broadcast of K[t][d] per key and NV Qt loads per d),
//    the causal mask only on tiles crossing the diagonal, online softmax on the lanes (running max / sum
//    per query row, vectorized exp2, no horizontal reductions), and O^T += V^T·P^T by a second
//    micro-kernel (DT d values × 8·NV rows, the online-softmax correction applied when the tile is loaded).
// The result is divided by the running sum and written back through 8 × 8 transposes. Rows of no active
// sequence (before cu_q_lens[0] and from cu_q_lens[num_seqs] on: the pad rows of the inactive slot) are
// zeroed. Items are ordered by estimated cost, largest first, and scheduled dynamically over the threads.
#include <opbench/kernel.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// Query tokens per work item of a prefill chunk: its Q_TOKENS·G query rows share every K/V block read
// (and its copy); smaller items balance better over the threads. Tuned on Zen 4 (cpu size, 2 threads,
// opbench tune): 48 tokens with 96-key blocks ~1.10-1.12x the baseline against 1.07-1.09x at 24/48.
// opbench:param Q_TOKENS 12 24 48 96
#ifndef Q_TOKENS
#define Q_TOKENS 48
#endif
// Keys per online-softmax block (a multiple of the 4-, 6- and 8-key score tiles and of the page size 16).
// opbench:param KV_BLOCK 48 96
#ifndef KV_BLOCK
#define KV_BLOCK 96
#endif
// Lane vectors per prefill micro-tile: 2 = 6 keys (or 6 d) × 16 query rows, 3 = 4 × 24 (register bound:
// its query vectors are re-read as FMA memory operands).
// opbench:param LANE_VECS 2 3
#ifndef LANE_VECS
#define LANE_VECS 2
#endif
// Copy each block's V rows (and, for prefill, K rows) into contiguous buffers before use (1) or read
// them in place (0): rows of one kv head are 4 KiB apart and alias to the same L1 sets.
// opbench:param PACK_KV 0 1
#ifndef PACK_KV
#define PACK_KV 1
#endif
// Blocks ahead that K/V rows are software-prefetched into L2 (0: none, the hardware prefetchers alone).
// On the 2-vCPU Xeon (2026-12-07, cpu size, tuned point, opbench eval in turn): 1.102, 1.093 with 1;
// 1.113, 1.118 with 0 (6p_Paged_Attention, bound by memory, lost 10-25% to the prefetches there).
// opbench:param PF_DIST 0 1
#ifndef PF_DIST
#define PF_DIST 0
#endif

#if !defined(__AVX2__) || !defined(__FMA__)
#error "needs AVX2 and FMA"
#endif

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int64_t KB = KV_BLOCK;
constexpr float kNeg = -1e30f;

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The lane vector of the micro-kernels, as a traits type: VY = ymm (8 query rows per vector, always
// available), VZ = zmm (16 rows, x86-64-v4 only). Decodes (G rows) use VY, prefill blocks VZ at v4.
struct VY {
  using T = __m256;
  static constexpr int W = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, T v) { _mm256_store_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T max(T a, T b) { return _mm256_max_ps(a, b); }
  // a > b ? y : x, per lane
  static T sel_gt(T a, T b, T x, T y) { return _mm256_blendv_ps(x, y, _mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
  // 2^x for x in [-127, 0] (every argument here is a score minus a running max): Cephes exp2f range
  // reduction and its polynomial less the f^6 term, relative error < 3e-6; x <= -127 gives exactly 0.
  static T exp2(T x) {
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
};
#if defined(__AVX512F__)
struct VZ {
  using T = __m512;
  static constexpr int W = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T bcast(const float* p) { return _mm512_set1_ps(*p); }
  static T load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, T v) { _mm512_store_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T max(T a, T b) { return _mm512_max_ps(a, b); }
  static T sel_gt(T a, T b, T x, T y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), x, y); }
  // The same polynomial; 2^n applied by vscalefps, lanes at or below -127 set to exactly 0.
  static T exp2(T x) {
    const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-127.0f), _CMP_GT_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-127.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(1.339887440266574e-3f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618437357674640e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550332471162809e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402264791363012e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931472028550421e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(live, p, n);
  }
};
using VWide = VZ;  // the vector of prefill blocks
#else
using VWide = VY;
#endif

// Micro-tile shapes by vector type and lane vectors NV: keys per score tile (KT) and d values per P·V
// tile (DT), so that KT·NV (DT·NV) accumulators fit the register file: 16 ymm at v3 (12 or fewer
// accumulators), 32 zmm at v4 (24 or fewer).
template <class V, int NV>
constexpr int kKT = V::W == 16 ? (NV == 1 ? 16 : (NV == 2 ? 12 : (NV == 3 ? 8 : 6)))
                               : (NV == 1 ? 8 : (NV == 2 ? 6 : 4));
template <class V, int NV> constexpr int kDT = kKT<V, NV>;
constexpr int64_t KB_PAD = (KB + 23) / 24 * 24 + 24;  // rows of the score buffer (>= KB rounded up to any KT)

static inline void prefetch_row(const float* row, int64_t bytes) {
  const char* p = reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(row) & ~uintptr_t(63));
  const char* end = reinterpret_cast<const char*>(row) + bytes;
  for (; p < end; p += 64) _mm_prefetch(p, _MM_HINT_T1);  // into L2: L1 miss buffers stay free
}

// In-register transpose of an 8 × 8 block of floats.
static inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// St[i][m0 .. m0+W·NV) = Σ_d K_i[d] · Qt[d][m0 ..] for the KTT keys whose rows are kr[0 .. KTT) (rows
// read in place or from the block copy).
template <class V, int KTT, int NV>
static inline void qk_tile(const float* const* kr, const float* __restrict qt, int64_t ldq, int64_t D,
                           float* __restrict st, int64_t lds) {
  using T = typename V::T;
  constexpr int W = V::W;
  T acc[KTT][NV];
  const float* r[KTT];
#pragma GCC unroll 16
  for (int i = 0; i < KTT; ++i) {
    r[i] = kr[i];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  }
#pragma GCC unroll 2
  for (int64_t d = 0; d < D; ++d) {
    T q[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) q[v] = V::load(qt + d * ldq + W * v);
#pragma GCC unroll 16
    for (int i = 0; i < KTT; ++i) {
      const T b = V::bcast(r[i] + d);
      if constexpr (W == 8 && KTT * NV + NV + 1 >= 16) {
        // No register left for the NV query vectors (GCC would spill accumulators): read them as FMA
        // memory operands, the empty asm keeps GCC from merging the loads into registers.
        const float* qd = qt + d * ldq;
        asm volatile("" : "+r"(qd));
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(b, V::load(qd + W * v), acc[i][v]);
      } else {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(b, q[v], acc[i][v]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < KTT; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) V::store(st + i * lds + W * v, acc[i][v]);
}

// The same product with the block's keys transposed (kt[d·ldk + i] = K_i[d]): the KTT broadcasts of a d
// step come from one line through one pointer (with 24 accumulators there are no registers left for
// KTT row pointers).
template <class V, int KTT, int NV>
static inline void qk_tile_t(const float* __restrict kt, int64_t ldk, const float* __restrict qt, int64_t ldq,
                             int64_t D, float* __restrict st, int64_t lds) {
  using T = typename V::T;
  constexpr int W = V::W;
  T acc[KTT][NV];
#pragma GCC unroll 24
  for (int i = 0; i < KTT; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
#pragma GCC unroll 2
  for (int64_t d = 0; d < D; ++d) {
    T q[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) q[v] = V::load(qt + d * ldq + W * v);
    const float* kd = kt + d * ldk;
#pragma GCC unroll 24
    for (int i = 0; i < KTT; ++i) {
      const T b = V::bcast(kd + i);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(b, q[v], acc[i][v]);
    }
  }
#pragma GCC unroll 24
  for (int i = 0; i < KTT; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) V::store(st + i * lds + W * v, acc[i][v]);
}

// Ot[d0+i][m0 ..] = alpha·Ot[d0+i][m0 ..] + Σ_t V_t[d0+i] · Pt[t][m0 ..] for i < DTT.
template <class V, int DTT, int NV>
static inline void pv_tile(const float* const* vr, int64_t n, const float* __restrict pt, int64_t ldp,
                           float* __restrict ot, int64_t ldo, const float* alpha, bool first, int64_t d0) {
  using T = typename V::T;
  constexpr int W = V::W;
  T acc[DTT][NV];
  if (first) {
#pragma GCC unroll 24
    for (int i = 0; i < DTT; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  } else {
    T a[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) a[v] = V::load(alpha + W * v);
#pragma GCC unroll 24
    for (int i = 0; i < DTT; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = V::mul(V::load(ot + i * ldo + W * v), a[v]);
  }
  for (int64_t t = 0; t < n; ++t) {
    T p[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) p[v] = V::load(pt + t * ldp + W * v);
    const float* row = vr[t] + d0;
#pragma GCC unroll 24
    for (int i = 0; i < DTT; ++i) {
      const T b = V::bcast(row + i);
      if constexpr (W == 8 && DTT * NV + NV + 1 >= 16) {  // as in qk_tile: P as FMA memory operands
        const float* pp = pt + t * ldp;
        asm volatile("" : "+r"(pp));
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(b, V::load(pp + W * v), acc[i][v]);
      } else {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(b, p[v], acc[i][v]);
      }
    }
  }
#pragma GCC unroll 24
  for (int i = 0; i < DTT; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) V::store(ot + i * ldo + W * v, acc[i][v]);
}

// The same with the V rows contiguous (vp + t·ldv: the block copy), so that the DTT broadcasts of a
// key are constant offsets from one pointer.
template <class V, int DTT, int NV>
static inline void pv_tile_c(const float* __restrict vp, int64_t ldv, int64_t n, const float* __restrict pt,
                             int64_t ldp, float* __restrict ot, int64_t ldo, const float* alpha, bool first) {
  using T = typename V::T;
  constexpr int W = V::W;
  T acc[DTT][NV];
  if (first) {
#pragma GCC unroll 24
    for (int i = 0; i < DTT; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  } else {
    T a[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) a[v] = V::load(alpha + W * v);
#pragma GCC unroll 24
    for (int i = 0; i < DTT; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = V::mul(V::load(ot + i * ldo + W * v), a[v]);
  }
  for (int64_t t = 0; t < n; ++t) {
    T p[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) p[v] = V::load(pt + W * v);
#pragma GCC unroll 24
    for (int i = 0; i < DTT; ++i) {
      const T b = V::bcast(vp + i);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(b, p[v], acc[i][v]);
    }
    vp += ldv;
    pt += ldp;
  }
#pragma GCC unroll 24
  for (int i = 0; i < DTT; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) V::store(ot + i * ldo + W * v, acc[i][v]);
}

// O^T += V^T P^T over rows [0, D) in tiles of DT, then 8, 4, 2 and 1 for the rest; vp: the block's V
// rows contiguous (row stride D), or null to read them through vr.
template <class V, int NV>
static inline void pv_all(const float* const* vr, const float* vp, int64_t n, const float* pt, int64_t ldp,
                          float* ot, int64_t ldo, const float* alpha, bool first, int64_t D) {
  constexpr int64_t DT = kDT<V, NV>, LW = V::W * NV;
  int64_t d0 = 0;
  if (vp != nullptr) {
    for (; d0 + DT <= D; d0 += DT) pv_tile_c<V, DT, NV>(vp + d0, D, n, pt, ldp, ot + d0 * LW, LW, alpha, first);
    if constexpr (DT > 8)
      for (; d0 + 8 <= D; d0 += 8) pv_tile_c<V, 8, NV>(vp + d0, D, n, pt, ldp, ot + d0 * LW, LW, alpha, first);
    for (; d0 + 4 <= D; d0 += 4) pv_tile_c<V, 4, NV>(vp + d0, D, n, pt, ldp, ot + d0 * LW, LW, alpha, first);
    for (; d0 + 2 <= D; d0 += 2) pv_tile_c<V, 2, NV>(vp + d0, D, n, pt, ldp, ot + d0 * LW, LW, alpha, first);
    if (d0 < D) pv_tile_c<V, 1, NV>(vp + d0, D, n, pt, ldp, ot + d0 * LW, LW, alpha, first);
    return;
  }
  for (; d0 + DT <= D; d0 += DT) pv_tile<V, DT, NV>(vr, n, pt, ldp, ot + d0 * LW, LW, alpha, first, d0);
  if constexpr (DT > 8)
    for (; d0 + 8 <= D; d0 += 8) pv_tile<V, 8, NV>(vr, n, pt, ldp, ot + d0 * LW, LW, alpha, first, d0);
  for (; d0 + 4 <= D; d0 += 4) pv_tile<V, 4, NV>(vr, n, pt, ldp, ot + d0 * LW, LW, alpha, first, d0);
  for (; d0 + 2 <= D; d0 += 2) pv_tile<V, 2, NV>(vr, n, pt, ldp, ot + d0 * LW, LW, alpha, first, d0);
  if (d0 < D) pv_tile<V, 1, NV>(vr, n, pt, ldp, ot + d0 * LW, LW, alpha, first, d0);
}

struct Geometry {
  int64_t D, G, PS;
  int64_t slot_stride, page_stride;  // floats between consecutive slots / pages of the cache
  int64_t row_stride;                // floats between consecutive token rows of queries / out
};

struct Scratch {
  float* qt;      // Mp / LW lane tiles of D × LW
  float* st;      // KB_PAD × 8·NV: the scores / probabilities of one lane tile
  float* ot;      // Mp / LW lane tiles of D × LW
  float* mrow;    // Mp running max (log2 domain)
  float* lrow;    // Mp running sum
  float* alpha;   // Mp correction of the current block
  float* posv;    // Mp absolute position of each query row (padding: never masked)
  const float** krow;  // KB_PAD
  const float** vrow;  // KB_PAD
  const float** prow;  // KB: K rows of the block being prefetched (V row = K row + vdelta)
  float* kpack;  // KB_PAD × D: the block's K rows, contiguous
  float* vpack;  // KB_PAD × D
};

int64_t scratch_floats(int64_t D, int64_t Mp) {
  int64_t f = 0;
  f += round_up(D * Mp, 16);
  f += round_up(KB_PAD * Mp, 16);
  f += round_up(D * Mp, 16);
  f += 4 * round_up(Mp, 16);
  f += round_up(3 * KB_PAD * 2, 16);  // pointers (8 bytes = 2 floats)
  f += 2 * round_up(KB_PAD * D, 16);
  return f;
}

Scratch carve(float* base, int64_t D, int64_t Mp) {
  Scratch w;
  w.qt = base; base += round_up(D * Mp, 16);
  w.st = base; base += round_up(KB_PAD * Mp, 16);
  w.ot = base; base += round_up(D * Mp, 16);
  w.mrow = base; base += round_up(Mp, 16);
  w.lrow = base; base += round_up(Mp, 16);
  w.alpha = base; base += round_up(Mp, 16);
  w.posv = base; base += round_up(Mp, 16);
  w.krow = reinterpret_cast<const float**>(base);
  w.vrow = w.krow + KB_PAD;
  w.prow = w.vrow + KB_PAD;
  base += round_up(3 * KB_PAD * 2, 16);
  w.kpack = base; base += round_up(KB_PAD * D, 16);
  w.vpack = base; base += round_up(KB_PAD * D, 16);
  return w;
}

// One work item: ntok consecutive query tokens of one sequence (q, o: token 0, head g·G, rows
// geo.row_stride apart), the G heads of kv head g, token j at absolute position pos0 + j, against keys
// 0 .. pos0+ntok-1 of the sequence (page table ptab; key t visible to token j iff t <= pos0 + j).
// V: the lane vector (VY or VZ), NV: lane vectors per micro-tile (lane tiles of LW = W·NV query rows).
template <class V, int NV>
void attend_item(const Geometry& geo, const Scratch& w, const float* q, float* o, int64_t ntok, int64_t pos0,
                 const float* kbase, const float* vbase, const int32_t* ptab, float qscale) {
  using T = typename V::T;
  constexpr int64_t KT = kKT<V, NV>, W = V::W, LW = W * NV;
  // zmm tiles have 24 accumulators and no registers left for KT key-row pointers: their score tiles read
  // the block's keys from a transposed copy (D × KB_PAD), which also serves every lane tile.
  constexpr bool kTrans = W == 16;
  const int64_t D = geo.D, G = geo.G, PS = geo.PS;
  const int64_t M = ntok * G, Mp = round_up(M, LW);
  const int64_t n_keys = pos0 + ntok;
  const int64_t vdelta = vbase - kbase;
  // Qt: lane m = token m / G, head m % G, in lane tiles of D × LW; zero padded. Groups of 8 full lanes go through
  // 8 × 8 register transposes, the rest element by element.
  const __m256 vscale = _mm256_set1_ps(qscale);
  int64_t m = 0;
  for (; m + 8 <= M && D % 8 == 0; m += 8) {
    const float* src[8];
    for (int i = 0; i < 8; ++i) src[i] = q + ((m + i) / G) * geo.row_stride + ((m + i) % G) * D;
    float* dst = w.qt + (m / LW) * D * LW + m % LW;
    for (int64_t d = 0; d < D; d += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_mul_ps(_mm256_loadu_ps(src[i] + d), vscale);
      transpose8(r);
      for (int i = 0; i < 8; ++i) _mm256_store_ps(dst + (d + i) * LW, r[i]);
    }
  }
  for (; m < M; ++m) {
    const float* src = q + (m / G) * geo.row_stride + (m % G) * D;
    float* dst = w.qt + (m / LW) * D * LW + m % LW;  // lane tile m / LW: D × LW
    for (int64_t d = 0; d < D; ++d) dst[d * LW] = src[d] * qscale;
  }
  for (m = M; m < Mp; ++m) {
    float* dst = w.qt + (m / LW) * D * LW + m % LW;
    for (int64_t d = 0; d < D; ++d) dst[d * LW] = 0.0f;
  }
  for (m = 0; m < Mp; ++m) w.posv[m] = m < M ? float(pos0 + m / G) : 3e38f;
  for (m = 0; m < Mp; ++m) {
    w.mrow[m] = kNeg;
    w.lrow[m] = 0.0f;
  }
  const int64_t row_bytes = D * int64_t(sizeof(float));
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
    if (kTrans) {
      // kpack[d·KB_PAD + t] = K_t[d]: 8 keys × 8 d per register transpose, zero keys up to the tile edge.
      int64_t t = 0;
      if (D % 8 == 0) {
        for (; t + 8 <= n; t += 8) {
          for (int64_t d = 0; d < D; d += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(w.krow[t + i] + d);
            transpose8(r);
            for (int i = 0; i < 8; ++i) _mm256_storeu_ps(w.kpack + (d + i) * KB_PAD + t, r[i]);
          }
        }
      }
      for (; t < ntile; ++t) {
        const float* ks = w.krow[t];
        for (int64_t d = 0; d < D; ++d) w.kpack[d * KB_PAD + t] = t < n ? ks[d] : 0.0f;
      }
    }
    // Rows of one kv head sit 4 KiB apart in the cache and alias to the same few L1 sets: the P·V tiles
    // (keys at a fixed d) and the lane tiles that reuse the block would miss on every row. Read the block's
    // V rows (and, with several lane tiles, its K rows) once into contiguous buffers.
    if (PACK_KV || kTrans) {
      const bool pack_k = !kTrans && Mp > LW;
      for (int64_t t = 0; t < n; ++t) {
        const float* ks = w.krow[t];
        const float* vs = w.vrow[t];
        float* kd = w.kpack + t * D;
        float* vd = w.vpack + t * D;
        int64_t d = 0;
        for (; d + 8 <= D; d += 8) {
          if (pack_k) _mm256_storeu_ps(kd + d, _mm256_loadu_ps(ks + d));
          _mm256_storeu_ps(vd + d, _mm256_loadu_ps(vs + d));
        }
        for (; d < D; ++d) {
          if (pack_k) kd[d] = ks[d];
          vd[d] = vs[d];
        }
        if (pack_k) w.krow[t] = kd;
        w.vrow[t] = vd;
      }
      if (pack_k)
        for (int64_t t = n; t < ntile; ++t) w.krow[t] = w.krow[n - 1];
    }
    // Rows of the block PF_DIST ahead (prefetched into L2 before the first lane tile's work).
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
    // Per lane tile (LW query rows): scores, causal mask + online softmax, P·V; the tile's St (KB × LW)
    // stays in L1 between the three. A lane tile only goes as far as the keys its last token sees.
    for (int64_t m0 = 0; m0 < Mp; m0 += LW) {
      const int64_t tok_lo = m0 / G, tok_hi = std::min<int64_t>(ntok - 1, (m0 + LW - 1) / G);
      const int64_t nl = std::min<int64_t>(n, pos0 + tok_hi + 1 - t0);  // keys of the block this tile sees
      if (m0 == 0 && np > 0) {  // rows of the block PF_DIST ahead, issued before this block's work
        for (int64_t t = 0; t < np; ++t) {
          prefetch_row(w.prow[t], row_bytes);
          prefetch_row(w.prow[t] + vdelta, row_bytes);
        }
      }
      if (nl <= 0) continue;  // every key of the block is past the tile's causal limit: p = 0, state unchanged
      const bool masked = t0 + nl - 1 > pos0 + tok_lo;  // some key is past some row's position
      // Scores (log2 domain): St[t][m].
      const int64_t ntl = round_up(nl, KT);
      for (int64_t kt = 0; kt < ntl; kt += KT) {
        if constexpr (kTrans)
          qk_tile_t<V, KT, NV>(w.kpack + kt, KB_PAD, w.qt + m0 * D, LW, D, w.st + kt * LW, LW);
        else
          qk_tile<V, KT, NV>(w.krow + kt, w.qt + m0 * D, LW, D, w.st + kt * LW, LW);
      }
      for (int64_t v = 0; v < NV; ++v) {
        float* sv = w.st + W * v;  // St of the lane tile: KB_PAD × LW
        const int64_t mv = m0 + W * v;
        const T mold = V::load(w.mrow + mv);
        T mx0 = mold, mx1 = mold;
        int64_t t = 0;
        if (masked) {
          const T pos = V::load(w.posv + mv);
          const T neg = V::set1(kNeg);
          for (; t < nl; ++t) {
            T s = V::load(sv + t * LW);
            s = V::sel_gt(V::set1(float(t0 + t)), pos, s, neg);
            V::store(sv + t * LW, s);
            mx0 = V::max(mx0, s);
          }
        } else {
          for (; t + 1 < nl; t += 2) {
            mx0 = V::max(mx0, V::load(sv + t * LW));
            mx1 = V::max(mx1, V::load(sv + (t + 1) * LW));
          }
          if (t < nl) mx0 = V::max(mx0, V::load(sv + t * LW));
        }
        const T mx = V::max(mx0, mx1);
        const T alpha = V::exp2(V::sub(mold, mx));
        T s0 = V::zero(), s1 = V::zero();
        for (t = 0; t + 1 < nl; t += 2) {
          const T p0 = V::exp2(V::sub(V::load(sv + t * LW), mx));
          const T p1 = V::exp2(V::sub(V::load(sv + (t + 1) * LW), mx));
          V::store(sv + t * LW, p0);
          V::store(sv + (t + 1) * LW, p1);
          s0 = V::add(s0, p0);
          s1 = V::add(s1, p1);
        }
        if (t < nl) {
          const T p0 = V::exp2(V::sub(V::load(sv + t * LW), mx));
          V::store(sv + t * LW, p0);
          s0 = V::add(s0, p0);
        }
        const T l = V::fma(V::load(w.lrow + mv), alpha, V::add(s0, s1));
        V::store(w.lrow + mv, l);
        V::store(w.mrow + mv, mx);
        V::store(w.alpha + mv, alpha);
      }
      // O^T += V^T P^T: DT-wide d tiles, then 8-, 4-, 2- and 1-wide tiles for the rest.
      pv_all<V, NV>(w.vrow, (PACK_KV || kTrans) ? w.vpack : nullptr, nl, w.st, LW, w.ot + m0 * D, LW, w.alpha + m0,
                    first, D);
    }
    first = false;
  }
  // out[token][head][d] = Ot[d][m] / l[m] (8 × 8 transposes for groups of 8 full lanes).
  for (m = 0; m < M; ++m) w.alpha[m] = 1.0f / w.lrow[m];
  m = 0;
  for (; m + 8 <= M && D % 8 == 0; m += 8) {
    float* dst[8];
    for (int i = 0; i < 8; ++i) dst[i] = o + ((m + i) / G) * geo.row_stride + ((m + i) % G) * D;
    const float* src = w.ot + (m / LW) * D * LW + m % LW;
    const __m256 inv = _mm256_load_ps(w.alpha + m);
    for (int64_t d = 0; d < D; d += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_mul_ps(_mm256_load_ps(src + (d + i) * LW), inv);
      transpose8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst[i] + d, r[i]);
    }
  }
  for (; m < M; ++m) {
    const float inv = w.alpha[m];
    float* orow = o + (m / G) * geo.row_stride + (m % G) * D;
    const float* src = w.ot + (m / LW) * D * LW + m % LW;
    for (int64_t d = 0; d < D; ++d) orow[d] = src[d * LW] * inv;
  }
}

struct Item {
  int32_t seq, g, r0, ntok;
  int64_t cost;
};

int64_t max_lanes(int64_t G) { return round_up(Q_TOKENS * G, VWide::W * LANE_VECS); }

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kv = call->inputs[1];
  const int64_t T = q.shape[0], Hq = q.shape[1], D = q.shape[2], Hkv = kv.shape[2] / 2;
  const int64_t SLOTS = call->inputs[2].shape[0];
  const int64_t items = 2 * Hkv * (T / Q_TOKENS + SLOTS + 1);  // the item list and a copy
  return uint64_t(call->num_threads) * uint64_t(scratch_floats(D, max_lanes(Hq / Hkv))) * sizeof(float) +
         uint64_t(items) * sizeof(Item) + 128;
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kv = call->inputs[1];
  const int64_t T = q.shape[0], Hq = q.shape[1], D = q.shape[2];
  const int64_t PS = kv.shape[1], Hkv = kv.shape[2] / 2, PPS = call->inputs[3].shape[1];
  const int64_t SLOTS = call->inputs[2].shape[0];
  const int64_t G = Hq / Hkv, L = PS * PPS;
  const float* Q = static_cast<const float*>(q.data);
  const float* KV = static_cast<const float*>(kv.data);
  const int32_t* kv_lens = static_cast<const int32_t*>(call->inputs[2].data);
  const int32_t* pages = static_cast<const int32_t*>(call->inputs[3].data);
  const int32_t* cu_q_lens = static_cast<const int32_t*>(call->inputs[4].data);
  const int64_t num_seqs = std::clamp<int64_t>(static_cast<const int32_t*>(call->inputs[5].data)[0], 0, SLOTS);
  float* O = static_cast<float*>(call->outputs[0].data);
  const float qscale = float(1.4426950408889634 / std::sqrt(double(D)));  // D^-1/2 · log2(e)
  const int64_t row = Hq * D;

  const Geometry geo{D, G, PS, 2 * Hkv * D, PS * 2 * Hkv * D, row};
  const int64_t Mmax = max_lanes(G);
  const int64_t per_thread = scratch_floats(D, Mmax);
  const int nt = std::max(1, int(call->num_threads));
  char* ws = static_cast<char*>(call->workspace);
  float* thread_base = reinterpret_cast<float*>(ws);
  Item* items = reinterpret_cast<Item*>(ws + uint64_t(nt) * uint64_t(per_thread) * sizeof(float));

  // Rows before the first and from the end of the last active sequence on belong to none: zero.
  const int64_t first_row = std::clamp<int64_t>(cu_q_lens[0], 0, T);
  const int64_t last_row = std::clamp<int64_t>(cu_q_lens[num_seqs], first_row, T);
  std::memset(O, 0, size_t(first_row * row) * sizeof(float));
  std::memset(O + last_row * row, 0, size_t((T - last_row) * row) * sizeof(float));

  // Work items, largest estimated cost (lanes × visible keys, plus a memory term) first.
  int64_t n_items = 0;
  for (int64_t i = 0; i < num_seqs; ++i) {
    const int64_t L_q = cu_q_lens[i + 1] - cu_q_lens[i], L_kv = std::min<int64_t>(kv_lens[i], L);
    for (int64_t r0 = 0; r0 < L_q; r0 += Q_TOKENS) {
      const int64_t ntok = std::min<int64_t>(Q_TOKENS, L_q - r0);
      const int64_t keys = L_kv - L_q + r0 + ntok;
      const int64_t cost = keys * (round_up(ntok * G, 8) + 16);
      for (int64_t g = 0; g < Hkv; ++g) items[n_items++] = Item{int32_t(i), int32_t(g), int32_t(r0), int32_t(ntok), cost};
    }
  }
  std::stable_sort(items, items + n_items, [](const Item& a, const Item& b) { return a.cost > b.cost; });
  // Decodes (one lane vector) are bound by memory, prefill blocks by the FMA units: spread the decodes
  // evenly through the order so that the threads overlap the two instead of ending on a memory-bound phase.
  {
    Item* tmp = items + n_items;
    int64_t n_dec = 0, n_cmp = 0;
    for (int64_t k = 0; k < n_items; ++k)
      if (int64_t(items[k].ntok) * G <= 8) tmp[n_dec++] = items[k];
    for (int64_t k = 0; k < n_items; ++k)
      if (int64_t(items[k].ntok) * G > 8) items[n_cmp++] = items[k];
    for (int64_t k = 0; k < n_dec; ++k) items[n_cmp + k] = tmp[k];  // [compute..., decode...]
    std::memcpy(tmp, items, size_t(n_items) * sizeof(Item));
    int64_t ic = 0, id = 0;
    for (int64_t k = 0; k < n_items; ++k) {
      const bool take_dec = id < n_dec && (ic >= n_cmp || (id + 1) * n_items <= (k + 1) * n_dec);
      items[k] = take_dec ? tmp[n_cmp + id++] : tmp[ic++];
    }
  }

#pragma omp parallel num_threads(nt)
  {
    const Scratch w = carve(thread_base + int64_t(omp_get_thread_num()) * per_thread, D, Mmax);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < n_items; ++it) {
      const Item& item = items[it];
      const int64_t i = item.seq, g = item.g, r0 = item.r0, ntok = item.ntok;
      const int64_t q_start = cu_q_lens[i], L_q = cu_q_lens[i + 1] - q_start;
      const int64_t L_kv = std::min<int64_t>(kv_lens[i], L);
      const int64_t pos0 = L_kv - L_q + r0;
      const float* qs = Q + (q_start + r0) * row + g * G * D;
      float* os = O + (q_start + r0) * row + g * G * D;
      if (pos0 + ntok <= 0) {  // no key visible (not in the data): write zeros
        for (int64_t r = 0; r < ntok; ++r) std::memset(os + r * row, 0, size_t(G * D) * sizeof(float));
        continue;
      }
      const float* kb = KV + 2 * g * D;
      const float* vb = kb + D;
      const int32_t* ptab = pages + i * PPS;
      const int64_t rows = ntok * G;
#if defined(__AVX512F__)
      // At v4: decodes (G <= 8 rows) on ymm lane tiles, prefill blocks on zmm tiles of up to LANE_VECS.
      if (rows <= 8)
        attend_item<VY, 1>(geo, w, qs, os, ntok, pos0, kb, vb, ptab, qscale);
      else if (rows <= 16 || LANE_VECS == 1)
        attend_item<VZ, 1>(geo, w, qs, os, ntok, pos0, kb, vb, ptab, qscale);
      else if (rows <= 32 || LANE_VECS == 2)
        attend_item<VZ, 2>(geo, w, qs, os, ntok, pos0, kb, vb, ptab, qscale);
      else if (rows <= 48 || LANE_VECS == 3)
        attend_item<VZ, 3>(geo, w, qs, os, ntok, pos0, kb, vb, ptab, qscale);
      else
        attend_item<VZ, 4>(geo, w, qs, os, ntok, pos0, kb, vb, ptab, qscale);
#else
      const int64_t lanes = (rows + 7) / 8;  // lane vectors needed
      if (lanes == 1 || LANE_VECS == 1)
        attend_item<VY, 1>(geo, w, qs, os, ntok, pos0, kb, vb, ptab, qscale);
      else if (lanes == 2 || LANE_VECS == 2)
        attend_item<VY, 2>(geo, w, qs, os, ntok, pos0, kb, vb, ptab, qscale);
      else
        attend_item<VY, 3>(geo, w, qs, os, ntok, pos0, kb, vb, ptab, qscale);
#endif
    }
  }
  return 0;
}
