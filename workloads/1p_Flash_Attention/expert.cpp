// 1p_Flash_Attention expert: causal flash attention on the CPU (AVX2/FMA, OpenMP), never materialising
// the S×S scores.
//
// One task = one (batch·head, block of BLOCK_Q query rows). A task
//  1. packs its query block transposed (Qᵀ, 16-row slivers, d-major, 8×8 register transposes) and
//     pre-scaled by log2(e)/√D, so the scores come out in base 2 and the softmax uses exp2;
//  2. walks the key blocks of BLOCK_K keys from j = 0 up to the causal diagonal only (blocks entirely
//     above the diagonal are never touched; inside a diagonal block, 6×16 tiles entirely above the
//     diagonal are skipped and the P·V product stops at the last key a row tile can see);
//  3. per key block: Sᵀ tile = K_blk · Qᵀ with a 6×16 register-blocked micro-kernel (6 keys broadcast
//     from K × 16 queries in two ymm vectors, 12 accumulators). The tile is kept transposed
//     ([key][query], row stride padded by 8 floats against cache-set aliasing) so that every
//     per-query-row softmax statistic is a plain vector operation: running max, rescale factor
//     α = 2^(m_old - m_new), running sum; P = 2^(s - m) by a vectorized exp2 (Cephes exp2f polynomial,
//     relative error ~2e-7), masked entries exactly 0;
//  4. O_tile = α·O_tile + P·V_blk with a 6×16 micro-kernel (6 query rows broadcast from Pᵀ × 16 head
//     dims loaded from V); the rescale by α is fused into the micro-kernel's epilogue;
//  5. divides by the running sum and writes its rows of the output.
// K and V are read in place (their rows are contiguous here); V is copied into a zero-padded block
// only when D is not a multiple of 8, so the micro-kernels never need masked loads.
// Per-thread scratch (Qᵀ, the Sᵀ/Pᵀ tile, the O tile and the row statistics) is ~150 KiB at the cpu
// size and lives in L2; a K or V block (48 KiB) is streamed from L1/L2.
// Tasks are ordered head by head, longest query block (nearest the end) first, and handed out
// dynamically, so the short blocks at the start of the sequence fill in at the end.
// Measured (2 threads, cpu size, shared machine): ~2.0-2.1x the OpenBLAS baseline, which computes the
// full S×S products; this kernel executes ~1.03x the useful (causal) FLOPs, ~85% of its time in the two
// micro-kernels; the rest is softmax (~4%), packing and output (~4%).
#include <opbench/kernel.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

// Query rows per task (multiple of 16): the M dimension of both products and the causal granularity.
// opbench:param BLOCK_Q 32 48 64 96 128
#ifndef BLOCK_Q
#define BLOCK_Q 96
#endif

// Keys per step of the online softmax: the N dimension of Q·Kᵀ and the K dimension of P·V.
// opbench:param BLOCK_K 32 48 64 96 128
#ifndef BLOCK_K
#define BLOCK_K 96
#endif

#if !defined(__AVX2__) || !defined(__FMA__)
#error "needs AVX2 and FMA"
#endif

namespace {

constexpr int64_t BQ = BLOCK_Q;
constexpr int64_t BK = BLOCK_K;
static_assert(BQ % 16 == 0 && BQ > 0, "BLOCK_Q must be a multiple of 16");
static_assert(BK > 0, "BLOCK_K must be positive");

constexpr int64_t kAlign = 64;
constexpr float kMaskedScore = -1e30f;

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// ---------------------------------------------------------------------------------------------------
// exp2 for x <= 0 (Cephes exp2f: 2^x = 2^n · (1 + f·P(f)), f in [-0.5, 0.5]); x below -125 gives
// ~2^-125 (callers zero masked entries explicitly).
static inline __m256 exp2_ps(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-125.0f));
  const __m256 magic = _mm256_set1_ps(12582912.0f);  // 1.5·2^23: adding it rounds to an integer
  const __m256 t = _mm256_add_ps(x, magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  const __m256 f = _mm256_sub_ps(x, n);
  __m256 p = _mm256_set1_ps(1.535336188319500e-4f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.339887440266574e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.618437357674640e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550332471162809e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.402264791363012e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.931472028550421e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  // The low mantissa bits of t hold n (two's complement); shifted into the exponent field they add n.
  const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(t), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}

// ---------------------------------------------------------------------------------------------------
// Sᵀ[0:JR, 0:16] = K[0:JR, 0:D] · Qᵀ[0:D, 0:16]. qt: D rows of 16 (packed, 32-byte aligned);
// k: JR key rows, leading dimension ldk, read in place; st: output rows, leading dimension ldst.
template <int JR>
__attribute__((noinline)) void qk_tile(int64_t D, const float* __restrict qt, const float* __restrict k, int64_t ldk,
                           float* __restrict st, int64_t ldst) {
  __m256 acc0[JR], acc1[JR];
  const float* kr[JR];
#pragma GCC unroll 6
  for (int r = 0; r < JR; ++r) {
    acc0[r] = _mm256_setzero_ps();
    acc1[r] = _mm256_setzero_ps();
    kr[r] = k + r * ldk;
  }
#pragma GCC unroll 2
  for (int64_t d = 0; d < D; ++d) {
    const __m256 q0 = _mm256_load_ps(qt + d * 16);
    const __m256 q1 = _mm256_load_ps(qt + d * 16 + 8);
#pragma GCC unroll 6
    for (int r = 0; r < JR; ++r) {
      const __m256 kb = _mm256_broadcast_ss(kr[r] + d);
      acc0[r] = _mm256_fmadd_ps(kb, q0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(kb, q1, acc1[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < JR; ++r) {
    _mm256_store_ps(st + r * ldst, acc0[r]);
    _mm256_store_ps(st + r * ldst + 8, acc1[r]);
  }
}

static inline void qk_tile_any(int jr, int64_t D, const float* qt, const float* k, int64_t ldk, float* st,
                               int64_t ldst) {
  switch (jr) {
    case 6: qk_tile<6>(D, qt, k, ldk, st, ldst); break;
    case 5: qk_tile<5>(D, qt, k, ldk, st, ldst); break;
    case 4: qk_tile<4>(D, qt, k, ldk, st, ldst); break;
    case 3: qk_tile<3>(D, qt, k, ldk, st, ldst); break;
    case 2: qk_tile<2>(D, qt, k, ldk, st, ldst); break;
    default: qk_tile<1>(D, qt, k, ldk, st, ldst); break;
  }
}

// ---------------------------------------------------------------------------------------------------
// O[0:MR, 0:8·NV] = α[0:MR] ∘ O + Pᵀ[0:kc, 0:MR]ᵀ · V[0:kc, 0:8·NV]. p: Pᵀ column block (row j at
// p + j·ldp); v: V rows (leading dimension ldv, at least 8·NV readable columns); o: the O tile (padded
// rows, aligned); alpha: the per-row rescale factors. `first`: O holds nothing yet (it is not read).
template <int MR, int NV>
__attribute__((noinline)) void pv_tile(int64_t kc, const float* __restrict p, int64_t ldp,
                                       const float* __restrict v, int64_t ldv, float* __restrict o,
                                       const float* __restrict alpha, int64_t ldo, bool first) {
  __m256 acc[MR][NV];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int n = 0; n < NV; ++n) acc[r][n] = _mm256_setzero_ps();
#pragma GCC unroll 2
  for (int64_t j = 0; j < kc; ++j) {
    __m256 vv[NV];
#pragma GCC unroll 2
    for (int n = 0; n < NV; ++n) vv[n] = _mm256_loadu_ps(v + j * ldv + 8 * n);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 pb = _mm256_broadcast_ss(p + j * ldp + r);
#pragma GCC unroll 2
      for (int n = 0; n < NV; ++n) acc[r][n] = _mm256_fmadd_ps(pb, vv[n], acc[r][n]);
    }
  }
  if (first) {
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
      for (int n = 0; n < NV; ++n) _mm256_store_ps(o + r * ldo + 8 * n, acc[r][n]);
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(alpha + r);
#pragma GCC unroll 2
      for (int n = 0; n < NV; ++n) {
        float* c = o + r * ldo + 8 * n;
        _mm256_store_ps(c, _mm256_fmadd_ps(_mm256_load_ps(c), a, acc[r][n]));
      }
    }
  }
}

template <int NV>
static inline void pv_tile_rows(int mr, int64_t kc, const float* p, int64_t ldp, const float* v, int64_t ldv,
                                float* o, const float* alpha, int64_t ldo, bool first) {
  switch (mr) {
    case 6: pv_tile<6, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    case 5: pv_tile<5, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    case 4: pv_tile<4, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    case 3: pv_tile<3, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    case 2: pv_tile<2, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    default: pv_tile<1, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
  }
}

// 8×8 transpose: on return r[k] holds column k of the input rows.
static inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

#if defined(__AVX512F__)
// ---------------------------------------------------------------------------------------------------
// x86-64-v4 (AVX-512): the same algorithm on zmm. Qᵀ slivers of QS = 32 query rows (two zmm); the
// score tile is JR = 12 keys × 32 rows (24 accumulators), reading Kᵀ in panels of 4 keys (D × 4 floats
// each, contiguous: a tile's 12 broadcasts of a d step come from three sequential streams; every head's
// Kᵀ is transposed once per call); the P·V
// tile is 6 rows × 64 head dims (4 zmm, 24 accumulators). Masked lanes use mask registers, exp2 uses
// vscalefps.
constexpr int64_t QS = 32;               // query rows per Qᵀ sliver
constexpr int JR = 12;                   // keys per score tile
constexpr int64_t BKR = (BK + JR - 1) / JR * JR;  // score rows (keys) of a block, rounded up to JR
constexpr int64_t KP = 4;                // keys per Kᵀ panel (BK, BKR and JR are multiples of it)
static_assert(BK % KP == 0 && JR % KP == 0, "key blocks and score tiles start on a Kᵀ panel");

// exp2 for x <= 0, the polynomial of exp2_ps, 2^n applied by vscalefps.
static inline __m512 exp2_512(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-125.0f));
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.535336188319500e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.339887440266574e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618437357674640e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550332471162809e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402264791363012e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931472028550421e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// Sᵀ[0:JR, 0:32] = Kᵀ[0:D, 0:JR]ᵀ · Qᵀ[0:D, 0:32]. qt: D rows of 32 (aligned); kt: the Kᵀ panel of the
// tile's first key (panels of KP keys, D × KP floats each, one after another); st: output rows, leading
// dimension ldst (aligned).
// The panels replace a Kᵀ with one row per d (S + padding floats long): there a tile's 128 d steps touched
// 128 lines 4 KiB apart, one 4 KiB page each. Scratch driver (2026-12-07, Xeon, one thread, D = 128, a
// 96-key block against 4 slivers): 155-169 GFLOP/s with the rows, 186-195 with the panels.
__attribute__((noinline)) void qk_tile512(int64_t D, const float* __restrict qt, const float* __restrict kt,
                                          float* __restrict st, int64_t ldst) {
  __m512 acc0[JR], acc1[JR];
#pragma GCC unroll 12
  for (int r = 0; r < JR; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
  const int64_t lp = KP * D;  // floats per panel
#pragma GCC unroll 2
  for (int64_t d = 0; d < D; ++d) {
    const __m512 q0 = _mm512_load_ps(qt + d * QS);
    const __m512 q1 = _mm512_load_ps(qt + d * QS + 16);
    const float* kd = kt + d * KP;
#pragma GCC unroll 12
    for (int r = 0; r < JR; ++r) {
      const __m512 kb = _mm512_set1_ps(kd[(r / KP) * lp + r % KP]);
      acc0[r] = _mm512_fmadd_ps(kb, q0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(kb, q1, acc1[r]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < JR; ++r) {
    _mm512_store_ps(st + r * ldst, acc0[r]);
    _mm512_store_ps(st + r * ldst + 16, acc1[r]);
  }
}

// O[0:MR, 0:16·NV] = α[0:MR] ∘ O + Pᵀ[0:kc, 0:MR]ᵀ · V[0:kc, 0:16·NV] (as pv_tile, zmm columns).
template <int MR, int NV>
__attribute__((noinline)) void pv_tile512(int64_t kc, const float* __restrict p, int64_t ldp,
                                          const float* __restrict v, int64_t ldv, float* __restrict o,
                                          const float* __restrict alpha, int64_t ldo, bool first) {
  __m512 acc[MR][NV];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int n = 0; n < NV; ++n) acc[r][n] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t j = 0; j < kc; ++j) {
    __m512 vv[NV];
#pragma GCC unroll 4
    for (int n = 0; n < NV; ++n) vv[n] = _mm512_loadu_ps(v + j * ldv + 16 * n);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m512 pb = _mm512_set1_ps(p[j * ldp + r]);
#pragma GCC unroll 4
      for (int n = 0; n < NV; ++n) acc[r][n] = _mm512_fmadd_ps(pb, vv[n], acc[r][n]);
    }
  }
  if (first) {
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int n = 0; n < NV; ++n) _mm512_store_ps(o + r * ldo + 16 * n, acc[r][n]);
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 4
      for (int n = 0; n < NV; ++n) {
        float* c = o + r * ldo + 16 * n;
        _mm512_store_ps(c, _mm512_fmadd_ps(_mm512_load_ps(c), a, acc[r][n]));
      }
    }
  }
}

template <int NV>
static inline void pv_tile512_rows(int mr, int64_t kc, const float* p, int64_t ldp, const float* v, int64_t ldv,
                                   float* o, const float* alpha, int64_t ldo, bool first) {
  switch (mr) {
    case 6: pv_tile512<6, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    case 5: pv_tile512<5, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    case 4: pv_tile512<4, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    case 3: pv_tile512<3, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    case 2: pv_tile512<2, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
    default: pv_tile512<1, NV>(kc, p, ldp, v, ldv, o, alpha, ldo, first); break;
  }
}

// Per-thread scratch for a query block of at most `rows` rows (rows / BQ slices of up to BQ rows, each
// padded to a multiple of QS).
struct Scratch {
  float* qt;     // Qᵀ: slivers of D×32
  float* st;     // Sᵀ, then Pᵀ: BKR rows of `rows + 16` (padded stride: no cache-set aliasing)
  float* o;      // O tile: rows × Dp
  float* vb;     // V block copied contiguous and padded to Dp columns (when needed): BK × Dp
  float* m;      // running max (base-2 scores)
  float* l;      // running sum
  float* alpha;  // rescale factor of the current key block
  const float* kth = nullptr;  // Kᵀ panels of the task's head, transposed by ob_run
};

// Kᵀ of every head, transposed once per call into the workspace: every query block of a head reads the
// same keys, so transposing per (query block, key block) did it ~S/(2·BQ) times over (~6% of the time
// at the cpu size). Key j, dimension d sits at (j / KP)·KP·D + d·KP + j % KP of the head's panels; keys
// S .. S+JR-1 are zero (the last score tile of a head reads up to there).
int64_t kt_head_floats(int64_t S, int64_t D) { return round_up(S + JR, KP) * D; }
int64_t kt_all_floats(int64_t heads, int64_t S, int64_t D) { return heads * kt_head_floats(S, D); }

void transpose_keys(int64_t heads, int64_t S, int64_t D, const float* K, float* kt_all, int threads) {
  static_assert(KP == 4, "an 8-key row of the transpose fills two panels");
  const int64_t per_head = kt_head_floats(S, D), blocks = (S + 7) / 8;
  auto at = [D](int64_t j, int64_t d) { return (j / KP) * KP * D + d * KP + j % KP; };
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t task = 0; task < heads * blocks; ++task) {
    const int64_t h = task / blocks, j = task % blocks * 8;
    const float* kh = K + h * S * D;
    float* dst = kt_all + h * per_head;
    int64_t d = 0;
    if (j + 8 <= S) {
      for (; d + 8 <= D; d += 8) {
        __m256 x[8];
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) x[r] = _mm256_loadu_ps(kh + (j + r) * D + d);
        transpose8(x);
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) {  // keys j .. j+3 and j+4 .. j+7 of dimension d + c
          _mm_storeu_ps(dst + at(j, d + c), _mm256_castps256_ps128(x[c]));
          _mm_storeu_ps(dst + at(j + 4, d + c), _mm256_extractf128_ps(x[c], 1));
        }
      }
    }
    for (; d < D; ++d)
      for (int64_t r = j; r < std::min(j + 8, S); ++r) dst[at(r, d)] = kh[r * D + d];
    if (j + 8 >= S)  // the head's last block: zero its padding keys
      for (int64_t e = 0; e < D; ++e)
        for (int64_t r = S; r < round_up(S + JR, KP); ++r) dst[at(r, e)] = 0.0f;
  }
}

int64_t padded_rows(int64_t rows) { return (rows + BQ - 1) / BQ * round_up(BQ, QS); }

int64_t scratch_floats(int64_t rows, int64_t D) {
  const int64_t R = padded_rows(rows), Dp = round_up(D, 16);
  const int64_t f = round_up(R * D, 16) + round_up(BKR * (R + 16), 16) + round_up(R * Dp, 16) +
                    round_up(BK * Dp, 16) + 3 * R;
  return round_up(f, 16);
}

Scratch carve(float* base, int64_t rows, int64_t D) {
  const int64_t R = padded_rows(rows), Dp = round_up(D, 16);
  Scratch s;
  s.qt = base;
  s.st = s.qt + round_up(R * D, 16);
  s.o = s.st + round_up(BKR * (R + 16), 16);
  s.vb = s.o + round_up(R * Dp, 16);
  s.m = s.vb + round_up(BK * Dp, 16);
  s.l = s.m + R;
  s.alpha = s.l + R;
  return s;
}

// One query block [i0, i0 + bq) of nh heads that share K and V. Head t reads query rows q[t] + i·ldq
// and writes output rows out[t] + i·ldo; value rows are v + j·ldk, keys come from sc.kth (Kᵀ, so k is
// not read here). cscale = log2(e)/√D.
void flash_block(int nh, const float* const* q, float* const* out, int64_t ldq, int64_t ldo, const float* /*k*/,
                 const float* v, int64_t ldk, int64_t S, int64_t D, int64_t i0, int64_t bq, float cscale,
                 const Scratch& sc) {
  const int64_t RS = round_up(bq, QS);  // padded rows per head slice
  const int64_t R = nh * RS;            // rows of the tile
  const int64_t ldst = R + 16;          // row stride of Sᵀ/Pᵀ
  const int64_t Dp = round_up(D, 16);
  // V rows read where they are when contiguous (rows strided by several heads alias in the L1 sets)
  // and a multiple of 16 wide; else copied, zero-padded.
  const bool v_in_place = ldk == D && D % 16 == 0;
  const int64_t ldvb = v_in_place ? ldk : Dp;

  // 1. Qᵀ slivers, scaled; padding rows are zero. Full 8×8 blocks go through a register transpose.
  const __m256 vscale = _mm256_set1_ps(cscale);
  for (int t = 0; t < nh; ++t) {
    for (int64_t s32 = 0; s32 < RS / QS; ++s32) {
      float* dst = sc.qt + (t * (RS / QS) + s32) * D * QS;
      for (int r8 = 0; r8 < QS; r8 += 8) {
        const int64_t ii0 = s32 * QS + r8;
        int64_t d = 0;
        if (ii0 + 8 <= bq) {
          const float* src = q[t] + (i0 + ii0) * ldq;
          for (; d + 8 <= D; d += 8) {
            __m256 x[8];
#pragma GCC unroll 8
            for (int r = 0; r < 8; ++r) x[r] = _mm256_mul_ps(_mm256_loadu_ps(src + r * ldq + d), vscale);
            transpose8(x);
#pragma GCC unroll 8
            for (int c = 0; c < 8; ++c) _mm256_store_ps(dst + (d + c) * QS + r8, x[c]);
          }
        }
        for (int r = 0; r < 8; ++r) {
          const int64_t ii = ii0 + r;
          if (ii < bq) {
            const float* src = q[t] + (i0 + ii) * ldq;
            for (int64_t e = d; e < D; ++e) dst[e * QS + r8 + r] = src[e] * cscale;
          } else {
            for (int64_t e = d; e < D; ++e) dst[e * QS + r8 + r] = 0.0f;
          }
        }
      }
    }
  }
  for (int64_t r = 0; r < R; r += 16) {
    _mm512_store_ps(sc.m + r, _mm512_set1_ps(kMaskedScore));
    _mm512_store_ps(sc.l + r, _mm512_setzero_ps());
  }

  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);

  for (int64_t j0 = 0; j0 < i0 + bq; j0 += BK) {
    const int64_t bk = std::min(BK, S - j0);
    const bool diag = j0 + bk - 1 > i0;  // some key of the block lies above the diagonal
    const bool first = j0 == 0;
    // Keys the block's score tiles reach (the causal limit of the last, padded, row of a slice),
    // rounded up to whole tiles.
    const int64_t jreach = std::min(bk, i0 + RS - j0);

    // Kᵀ of the block: the head's, transposed up front by ob_run (keys past jreach are real keys there,
    // their scores are never read: every row's visible keys end before jreach). V copied when its rows
    // need padding.
    const float* ktb = sc.kth + j0 * D;  // j0 is a multiple of KP: key j0 + jt's panel is ktb + jt·D
    const float* vb = v + j0 * ldk;
    if (!v_in_place) {
      for (int64_t j = 0; j < jreach; ++j) {
        const float* src = vb + j * ldk;
        float* dst = sc.vb + j * Dp;
        for (int64_t d = 0; d < Dp; d += 16) {
          const int64_t n = std::min<int64_t>(16, D - d);
          const __mmask16 mk = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
          _mm512_store_ps(dst + d, _mm512_maskz_loadu_ps(mk, src + d));
        }
      }
      vb = sc.vb;
    }

    // 2. Sᵀ = K_blk · Qᵀ, skipping JR×32 tiles that lie entirely above the diagonal.
    for (int64_t T = 0; T < R / QS; ++T) {
      const int64_t ii = (T % (RS / QS)) * QS;  // first row of the sliver within its head
      const int64_t jlim = diag ? std::clamp<int64_t>(i0 + ii + QS - j0, 0, bk) : bk;
      const float* qt = sc.qt + T * D * QS;
      for (int64_t jt = 0; jt < jlim; jt += JR) qk_tile512(D, qt, ktb + jt * D, sc.st + jt * ldst + T * QS, ldst);
    }

    // 3. Online softmax, 16 query rows per vector.
    const __m512 neg = _mm512_set1_ps(kMaskedScore);
    for (int64_t c0 = 0; c0 < R; c0 += 16) {
      const int64_t ii = c0 % RS;
      float* col = sc.st + c0;
      // keys [0, jfull) are visible to all 16 rows, [jfull, jlim) to some, [jlim, bk) to none.
      int64_t jfull = bk, jlim = bk;
      if (diag) {
        jlim = std::clamp<int64_t>(i0 + ii + 16 - j0, 0, bk);
        jfull = std::clamp<int64_t>(i0 + ii + 1 - j0, 0, jlim);
      }
      const __m512 m_old = _mm512_load_ps(sc.m + c0);
      __m512 mx0 = m_old, mx1 = neg;
      int64_t j = 0;
      for (; j + 1 < jfull; j += 2) {
        mx0 = _mm512_max_ps(mx0, _mm512_load_ps(col + j * ldst));
        mx1 = _mm512_max_ps(mx1, _mm512_load_ps(col + (j + 1) * ldst));
      }
      for (; j < jfull; ++j) mx0 = _mm512_max_ps(mx0, _mm512_load_ps(col + j * ldst));
      for (j = jfull; j < jlim; ++j) {
        // visible lanes: i0 + ii + lane >= j0 + j
        const __mmask16 vis = _mm512_cmpgt_epi32_mask(lane, _mm512_set1_epi32(int32_t(j0 + j - i0 - ii - 1)));
        mx0 = _mm512_mask_max_ps(mx0, vis, mx0, _mm512_load_ps(col + j * ldst));
      }
      const __m512 m_new = _mm512_max_ps(mx0, mx1);
      const __m512 alpha = exp2_512(_mm512_sub_ps(m_old, m_new));
      __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
      for (j = 0; j + 1 < jfull; j += 2) {
        const __m512 p0 = exp2_512(_mm512_sub_ps(_mm512_load_ps(col + j * ldst), m_new));
        const __m512 p1 = exp2_512(_mm512_sub_ps(_mm512_load_ps(col + (j + 1) * ldst), m_new));
        _mm512_store_ps(col + j * ldst, p0);
        _mm512_store_ps(col + (j + 1) * ldst, p1);
        sum0 = _mm512_add_ps(sum0, p0);
        sum1 = _mm512_add_ps(sum1, p1);
      }
      for (; j < jfull; ++j) {
        const __m512 p0 = exp2_512(_mm512_sub_ps(_mm512_load_ps(col + j * ldst), m_new));
        _mm512_store_ps(col + j * ldst, p0);
        sum0 = _mm512_add_ps(sum0, p0);
      }
      for (j = jfull; j < jlim; ++j) {
        const __mmask16 vis = _mm512_cmpgt_epi32_mask(lane, _mm512_set1_epi32(int32_t(j0 + j - i0 - ii - 1)));
        const __m512 p0 = _mm512_maskz_mov_ps(vis, exp2_512(_mm512_sub_ps(_mm512_load_ps(col + j * ldst), m_new)));
        _mm512_store_ps(col + j * ldst, p0);
        sum0 = _mm512_add_ps(sum0, p0);
      }
      for (j = jlim; j < bk; ++j) _mm512_store_ps(col + j * ldst, _mm512_setzero_ps());
      _mm512_store_ps(sc.m + c0, m_new);
      _mm512_store_ps(sc.alpha + c0, alpha);
      _mm512_store_ps(sc.l + c0, _mm512_fmadd_ps(_mm512_load_ps(sc.l + c0), alpha, _mm512_add_ps(sum0, sum1)));
    }

    // 4. O = α∘O + P·V_blk: row tiles of 6 outer (their Pᵀ strip stays in L1), 64-column tiles of V
    //    inner; in a diagonal block each row tile stops at the last key it can see.
    for (int64_t r0 = 0; r0 < R; r0 += 6) {
      const int mr = int(std::min<int64_t>(6, R - r0));
      int64_t kc = bk;
      if (diag) {
        int64_t imax = 0;
        for (int r = 0; r < mr; ++r) imax = std::max(imax, (r0 + r) % RS);
        kc = std::clamp<int64_t>(i0 + imax + 1 - j0, 0, bk);
      }
      const float* p = sc.st + r0;
      const float* al = sc.alpha + r0;
      float* o = sc.o + r0 * Dp;
      int64_t d0 = 0;
      for (; d0 + 64 <= Dp; d0 += 64) pv_tile512_rows<4>(mr, kc, p, ldst, vb + d0, ldvb, o + d0, al, Dp, first);
      switch ((Dp - d0) / 16) {
        case 3: pv_tile512_rows<3>(mr, kc, p, ldst, vb + d0, ldvb, o + d0, al, Dp, first); break;
        case 2: pv_tile512_rows<2>(mr, kc, p, ldst, vb + d0, ldvb, o + d0, al, Dp, first); break;
        case 1: pv_tile512_rows<1>(mr, kc, p, ldst, vb + d0, ldvb, o + d0, al, Dp, first); break;
        default: break;
      }
    }
  }

  // 5. Normalise and write the valid rows.
  for (int t = 0; t < nh; ++t) {
    for (int64_t ii = 0; ii < bq; ++ii) {
      const int64_t r = t * RS + ii;
      const __m512 vinv = _mm512_set1_ps(1.0f / sc.l[r]);
      const float* src = sc.o + r * Dp;
      float* dst = out[t] + (i0 + ii) * ldo;
      for (int64_t d = 0; d < D; d += 16) {
        const int64_t n = std::min<int64_t>(16, D - d);
        const __mmask16 mk = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
        _mm512_mask_storeu_ps(dst + d, mk, _mm512_mul_ps(_mm512_load_ps(src + d), vinv));
      }
    }
  }
}

#else  // x86-64-v3: AVX2

// ---------------------------------------------------------------------------------------------------
// Per-thread scratch for a query block of at most `rows` rows (nh slices of up to BQ rows).
struct Scratch {
  float* qt;     // Qᵀ: rows/16 slivers of D×16
  float* st;     // Sᵀ, then Pᵀ: BK rows of `rows + 8` (padded stride: no cache-set aliasing)
  float* o;      // O tile: rows × Dp
  float* kb;     // K block copied contiguous (when K rows are strided): BK × D
  float* vb;     // V block copied contiguous and padded to Dp columns (when needed): BK × Dp
  float* m;      // running max (base-2 scores)
  float* l;      // running sum
  float* alpha;  // rescale factor of the current key block
};

int64_t scratch_floats(int64_t rows, int64_t D) {
  const int64_t Dp = round_up(D, 8);
  const int64_t f = round_up(rows * D, 16) + round_up(BK * (rows + 8), 16) + round_up(rows * Dp, 16) +
                    round_up(BK * D, 16) + round_up(BK * Dp, 16) + 3 * rows;
  return round_up(f, 16);
}

Scratch carve(float* base, int64_t rows, int64_t D) {
  const int64_t Dp = round_up(D, 8);
  Scratch s;
  s.qt = base;
  s.st = s.qt + round_up(rows * D, 16);
  s.o = s.st + round_up(BK * (rows + 8), 16);
  s.kb = s.o + round_up(rows * Dp, 16);
  s.vb = s.kb + round_up(BK * D, 16);
  s.m = s.vb + round_up(BK * Dp, 16);
  s.l = s.m + rows;
  s.alpha = s.l + rows;
  return s;
}

// One query block [i0, i0 + bq) of nh heads that share K and V (nh = 1 here). Head t reads query rows
// q[t] + i·ldq and writes output rows out[t] + i·ldo; key/value rows are k + j·ldk, v + j·ldk.
// cscale = log2(e)/√D.
void flash_block(int nh, const float* const* q, float* const* out, int64_t ldq, int64_t ldo, const float* k,
                 const float* v, int64_t ldk, int64_t S, int64_t D, int64_t i0, int64_t bq, float cscale,
                 const Scratch& sc) {
  const int64_t RS = round_up(bq, 16);  // padded rows per head slice
  const int64_t R = nh * RS;            // rows of the tile
  const int64_t ldst = R + 8;           // row stride of Sᵀ/Pᵀ
  const int64_t Dp = round_up(D, 8);
  const bool k_in_place = ldk == D;                 // rows already contiguous
  const bool v_in_place = ldk == D && D % 8 == 0;   // and no padding needed
  const int64_t ldkb = k_in_place ? ldk : D;
  const int64_t ldvb = v_in_place ? ldk : Dp;

  // 1. Qᵀ slivers, scaled; padding rows are zero. Full 8×8 blocks go through a register transpose.
  const __m256 vscale = _mm256_set1_ps(cscale);
  for (int t = 0; t < nh; ++t) {
    for (int64_t s16 = 0; s16 < RS / 16; ++s16) {
      float* dst = sc.qt + (t * (RS / 16) + s16) * D * 16;
      for (int r8 = 0; r8 < 16; r8 += 8) {
        const int64_t ii0 = s16 * 16 + r8;
        int64_t d = 0;
        if (ii0 + 8 <= bq) {
          const float* src = q[t] + (i0 + ii0) * ldq;
          for (; d + 8 <= D; d += 8) {
            __m256 x[8];
#pragma GCC unroll 8
            for (int r = 0; r < 8; ++r) x[r] = _mm256_mul_ps(_mm256_loadu_ps(src + r * ldq + d), vscale);
            transpose8(x);
#pragma GCC unroll 8
            for (int c = 0; c < 8; ++c) _mm256_store_ps(dst + (d + c) * 16 + r8, x[c]);
          }
        }
        for (int r = 0; r < 8; ++r) {
          const int64_t ii = ii0 + r;
          if (ii < bq) {
            const float* src = q[t] + (i0 + ii) * ldq;
            for (int64_t e = d; e < D; ++e) dst[e * 16 + r8 + r] = src[e] * cscale;
          } else {
            for (int64_t e = d; e < D; ++e) dst[e * 16 + r8 + r] = 0.0f;
          }
        }
      }
    }
  }
  for (int64_t r = 0; r < R; r += 8) {
    _mm256_store_ps(sc.m + r, _mm256_set1_ps(kMaskedScore));
    _mm256_store_ps(sc.l + r, _mm256_setzero_ps());
  }

  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

  for (int64_t j0 = 0; j0 < i0 + bq; j0 += BK) {
    const int64_t bk = std::min(BK, S - j0);
    const bool diag = j0 + bk - 1 > i0;  // some key of the block lies above the diagonal
    const bool first = j0 == 0;

    // K and V blocks: read in place when their rows are contiguous, else copied (once for all nh heads).
    const float* kb = k + j0 * ldk;
    const float* vb = v + j0 * ldk;
    if (!k_in_place) {
      for (int64_t j = 0; j < bk; ++j) {
        const float* src = kb + j * ldk;
        float* dst = sc.kb + j * D;
        int64_t d = 0;
        for (; d + 8 <= D; d += 8) _mm256_storeu_ps(dst + d, _mm256_loadu_ps(src + d));
        for (; d < D; ++d) dst[d] = src[d];
      }
      kb = sc.kb;
    }
    if (!v_in_place) {
      for (int64_t j = 0; j < bk; ++j) {
        const float* src = vb + j * ldk;
        float* dst = sc.vb + j * Dp;
        int64_t d = 0;
        for (; d + 8 <= D; d += 8) _mm256_store_ps(dst + d, _mm256_loadu_ps(src + d));
        for (; d < D; ++d) dst[d] = src[d];
        for (; d < Dp; ++d) dst[d] = 0.0f;
      }
      vb = sc.vb;
    }

    // 2. Sᵀ = K_blk · Qᵀ, skipping 6×16 tiles that lie entirely above the diagonal.
    for (int64_t T = 0; T < R / 16; ++T) {
      const int64_t ii = (T % (RS / 16)) * 16;  // first row of the sliver within its head
      const int64_t jlim = diag ? std::clamp<int64_t>(i0 + ii + 16 - j0, 0, bk) : bk;
      const float* qt = sc.qt + T * D * 16;
      for (int64_t jt = 0; jt < jlim; jt += 6)
        qk_tile_any(int(std::min<int64_t>(6, jlim - jt)), D, qt, kb + jt * ldkb, ldkb, sc.st + jt * ldst + T * 16,
                    ldst);
    }

    // 3. Online softmax, 8 query rows per vector.
    const __m256 neg = _mm256_set1_ps(kMaskedScore);
    for (int64_t c0 = 0; c0 < R; c0 += 8) {
      const int64_t ii = c0 % RS;
      float* col = sc.st + c0;
      // keys [0, jfull) are visible to all 8 rows, [jfull, jlim) to some, [jlim, bk) to none.
      int64_t jfull = bk, jlim = bk;
      if (diag) {
        jlim = std::clamp<int64_t>(i0 + ii + 8 - j0, 0, bk);
        jfull = std::clamp<int64_t>(i0 + ii + 1 - j0, 0, jlim);
      }
      const __m256 m_old = _mm256_load_ps(sc.m + c0);
      __m256 mx0 = m_old, mx1 = neg;
      int64_t j = 0;
      for (; j + 1 < jfull; j += 2) {
        mx0 = _mm256_max_ps(mx0, _mm256_load_ps(col + j * ldst));
        mx1 = _mm256_max_ps(mx1, _mm256_load_ps(col + (j + 1) * ldst));
      }
      for (; j < jfull; ++j) mx0 = _mm256_max_ps(mx0, _mm256_load_ps(col + j * ldst));
      for (j = jfull; j < jlim; ++j) {
        // visible lanes: i0 + ii + lane >= j0 + j
        const __m256i thr = _mm256_set1_epi32(int32_t(j0 + j - i0 - ii - 1));
        const __m256 vis = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lane, thr));
        mx0 = _mm256_max_ps(mx0, _mm256_blendv_ps(neg, _mm256_load_ps(col + j * ldst), vis));
      }
      const __m256 m_new = _mm256_max_ps(mx0, mx1);
      const __m256 alpha = exp2_ps(_mm256_sub_ps(m_old, m_new));
      // One sum chain: the add latency hides under the exp2 of the next row (more chains spill).
      __m256 sum0 = _mm256_setzero_ps();
      for (j = 0; j < jfull; ++j) {
        const __m256 p0 = exp2_ps(_mm256_sub_ps(_mm256_load_ps(col + j * ldst), m_new));
        _mm256_store_ps(col + j * ldst, p0);
        sum0 = _mm256_add_ps(sum0, p0);
      }
      for (j = jfull; j < jlim; ++j) {
        const __m256i thr = _mm256_set1_epi32(int32_t(j0 + j - i0 - ii - 1));
        const __m256 vis = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lane, thr));
        const __m256 p0 =
            _mm256_and_ps(vis, exp2_ps(_mm256_sub_ps(_mm256_load_ps(col + j * ldst), m_new)));
        _mm256_store_ps(col + j * ldst, p0);
        sum0 = _mm256_add_ps(sum0, p0);
      }
      for (j = jlim; j < bk; ++j) _mm256_store_ps(col + j * ldst, _mm256_setzero_ps());
      _mm256_store_ps(sc.m + c0, m_new);
      _mm256_store_ps(sc.alpha + c0, alpha);
      _mm256_store_ps(sc.l + c0,
                      _mm256_fmadd_ps(_mm256_load_ps(sc.l + c0), alpha, sum0));
    }

    // 4. O = α∘O + P·V_blk: row tiles of 6 outer (their Pᵀ strip stays in L1), 16-column tiles of V
    //    inner; in a diagonal block each row tile stops at the last key it can see.
    for (int64_t r0 = 0; r0 < R; r0 += 6) {
      const int mr = int(std::min<int64_t>(6, R - r0));
      int64_t kc = bk;
      if (diag) {
        int64_t imax = 0;
        for (int r = 0; r < mr; ++r) imax = std::max(imax, (r0 + r) % RS);
        kc = std::clamp<int64_t>(i0 + imax + 1 - j0, 0, bk);
      }
      const float* p = sc.st + r0;
      const float* al = sc.alpha + r0;
      float* o = sc.o + r0 * Dp;
      int64_t d0 = 0;
      for (; d0 + 16 <= Dp; d0 += 16) pv_tile_rows<2>(mr, kc, p, ldst, vb + d0, ldvb, o + d0, al, Dp, first);
      if (d0 < Dp) pv_tile_rows<1>(mr, kc, p, ldst, vb + d0, ldvb, o + d0, al, Dp, first);
    }
  }

  // 5. Normalise and write the valid rows.
  for (int t = 0; t < nh; ++t) {
    for (int64_t ii = 0; ii < bq; ++ii) {
      const int64_t r = t * RS + ii;
      const float inv = 1.0f / sc.l[r];
      const float* src = sc.o + r * Dp;
      float* dst = out[t] + (i0 + ii) * ldo;
      const __m256 vinv = _mm256_set1_ps(inv);
      int64_t d = 0;
      for (; d + 8 <= D; d += 8) _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_load_ps(src + d), vinv));
      for (; d < D; ++d) dst[d] = src[d] * inv;
    }
  }
}

#endif  // __AVX512F__

#if !defined(__AVX512F__)
int64_t kt_all_floats(int64_t, int64_t, int64_t) { return 0; }  // v3 reads K in place
#endif

int32_t thread_count(const ob_call* call) { return std::max<int32_t>(1, call->num_threads); }

uint64_t workspace_bytes(int64_t rows, int64_t D, int32_t threads, int64_t kt_floats) {
  return (uint64_t(threads) * uint64_t(scratch_floats(rows, D)) + uint64_t(round_up(kt_floats, 16))) * sizeof(float) +
         kAlign;
}

float* align_up(void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((u + kAlign - 1) / kAlign * kAlign);
}

}  // namespace

OB_DEFINE_ABI_VERSION()

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  return workspace_bytes(BQ, q.shape[3], thread_count(call), kt_all_floats(q.shape[0] * q.shape[1], q.shape[2], q.shape[3]));
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& qt = call->inputs[0];
  const int64_t B = qt.shape[0], H = qt.shape[1], S = qt.shape[2], D = qt.shape[3];
  const float* Q = static_cast<const float*>(qt.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  if (B * H * S * D == 0) return 0;

  const int32_t threads = thread_count(call);
  const int64_t kt_floats = kt_all_floats(B * H, S, D);
  const uint64_t need = workspace_bytes(BQ, D, threads, kt_floats);
  void* heap = nullptr;
  void* scratch = call->workspace;
  if (scratch == nullptr || call->workspace_bytes < need) {
    heap = std::malloc(need);
    if (heap == nullptr) return 1;
    scratch = heap;
  }
  float* base = align_up(scratch);
  const int64_t per_thread = scratch_floats(BQ, D);
  const float cscale = float(1.4426950408889634 / std::sqrt(double(D)));
  const int64_t nqb = (S + BQ - 1) / BQ;
  const int64_t tasks = B * H * nqb;
  [[maybe_unused]] float* kt_all = base + int64_t(threads) * per_thread;
#if defined(__AVX512F__)
  transpose_keys(B * H, S, D, K, kt_all, threads);
#endif

#pragma omp parallel num_threads(threads)
  {
    Scratch sc = carve(base + int64_t(omp_get_thread_num()) * per_thread, BQ, D);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t bh = t / nqb;
#if defined(__AVX512F__)
      sc.kth = kt_all + bh * kt_head_floats(S, D);
#endif
      const int64_t qb = nqb - 1 - t % nqb;  // longest blocks of each head first
      const int64_t i0 = qb * BQ, bq = std::min(BQ, S - i0);
      const float* qh = Q + bh * S * D;
      float* oh = O + bh * S * D;
      flash_block(1, &qh, &oh, D, D, K + bh * S * D, V + bh * S * D, D, S, D, i0, bq, cscale, sc);
    }
  }
  std::free(heap);
  return 0;
}
