// 11p_Megablox_GMM expert: grouped GEMM over ragged groups with a packed SIMD GEMM (zmm at x86-64-v4, ymm at v3), no libraries.
//
//  - Work split: the output rows are consecutive per group, so the rows are cut into one contiguous
//    range per thread, balanced by cost (rows, plus a per-group charge for packing that group's
//    weights). A thread walks the groups its range touches; only a group that straddles a cut is
//    handled by two threads (each packs its weights), and cuts close to a group boundary snap to it.
//    No barriers, no dynamic scheduling.
//  - Per (thread, group segment): a BLIS-style blocked GEMM, the core of workloads/8p_GEMM/expert.cpp.
//    v4: a 14x32 zmm register tile (28 accumulators), loop nest "K panel -> A block (packed once) ->
//    B panel of rhs[g] -> A sliver -> B sliver", one A sliver in L1 while the B panel streams from
//    L2. The rows of rhs that the next packing step reads (this group's next panel, else the next
//    group's first) are prefetched into L2 a line every 4 k steps inside the tiles (RowPrefetch).
//    v3: a 6x16 ymm tile in inline assembly, one B sliver reused across an MC-row A block. The last
//    sliver of a ragged group uses a tile that computes only its valid rows. Empty groups cost nothing.
//  - Rows past the sum of the group sizes are zeroed; fp32 accumulation.
#include <opbench/kernel.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

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

// opbench:param KC 0 256 384 512
// Most depth of a packed panel (K block; K is cut into equal panels of at most KC, multiples of 8).
// 0: the level's default. v4: the 14-row A sliver (KC x 14 floats) fills ~60% of L1d, read at run
// time, and at most 384 (48 KiB: 384, 32 KiB: 344). v3: 384 (a KC x 16 B sliver stays in L1 while
// the A block streams).
#ifndef KC
#define KC 0
#endif
// opbench:param MC 0 144 288 1036
// Rows of lhs packed per block (rounded up to MR). 0: the level's default. v4: 1036 (a whole group
// segment at the cpu size, so each B panel of rhs[g] is packed once); v3: 144 (an MC x KC block in L2).
#ifndef MC
#define MC 0
#endif
// opbench:param NC 0 256 448 768
// Columns of rhs[g] packed per panel (rounded up to NR). 0: the level's default. v4: 448 (a 512 x 448
// panel is 0.9 MiB of L2); v3: 768.
#ifndef NC
#define NC 0
#endif
// opbench:param PACK_ROWS 0 16 64
// Cost of packing one group's weights, in rows of compute, for balancing the threads' row ranges.
#ifndef PACK_ROWS
#define PACK_ROWS 16
#endif

namespace {

#if defined(__AVX512F__)
constexpr int64_t MR = 14;  // rows of the register tile: 28 zmm accumulators of 32
#else
constexpr int64_t MR = 6;   // 12 ymm accumulators of 16
#endif
constexpr int64_t VW = int64_t(sizeof(vec) / sizeof(float));  // floats per vector: 16 (zmm) or 8 (ymm)
constexpr int64_t NR = 2 * VW;                                 // columns of the register tile
constexpr int64_t kAlign = 64;

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Block sizes of one call: the tuned -D values, else the level's defaults (see the parameters).
struct Blocking {
  int64_t kc = 0, mc = 0, nc = 0;
};

#if defined(__AVX512F__)
// The L1 data cache of this host (glibc reads it from cpuid); 32 KiB where it cannot tell.
int64_t l1d_bytes() {
  const long v = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  return v >= 16384 && v <= (1 << 20) ? int64_t(v) : 32768;
}
#endif

Blocking blocking_for(int64_t M) {
  Blocking b;
#if defined(__AVX512F__)
  // At most 384 deep: a group's C block (~256 rows x 768 at the cpu size, 0.8 MiB) then shares L2
  // with the B panel (`opbench tune` on the Xeon: KC 256 / 384 0.99x the baseline, 512 0.95-0.96x).
  b.kc = KC > 0 ? KC : std::clamp<int64_t>(l1d_bytes() * 6 / 10 / (MR * 4) / 8 * 8, 128, 384);
  b.mc = MC > 0 ? MC : 1036;
  b.nc = NC > 0 ? NC : 448;
#else
  b.kc = KC > 0 ? KC : 384;
  b.mc = MC > 0 ? MC : 144;
  b.nc = NC > 0 ? NC : 768;
#endif
  b.kc = round_up(b.kc, 8);
  b.mc = std::min(round_up(b.mc, MR), round_up(std::max<int64_t>(M, 1), MR));  // no block taller than A
  b.nc = round_up(b.nc, NR);
  return b;
}

// Per-thread scratch (floats): packed A block (+ slack for the overlapping 8-wide stores of the v3
// transpose packer) and one packed B panel. mc * kc is a multiple of 16 (MR * 8 is), so the B panel
// stays 64-byte aligned.
int64_t a_block_floats(const Blocking& bl) { return bl.mc * bl.kc + 64; }
int64_t b_panel_floats(const Blocking& bl, int64_t n) { return bl.kc * round_up(std::min(n, bl.nc), NR); }
int64_t thread_floats(const Blocking& bl, int64_t n) { return round_up(a_block_floats(bl) + b_panel_floats(bl, n), 16); }

// Up to two source rows of the B panel that is packed next (rhs[g] rows, `lines` cache lines each):
// a v4 tile pulls them into L2 one line every 4 k steps, so reading the weights from DRAM, 201 MB per
// call at the cpu size, overlaps the FMAs. Spread this thin it pays (Xeon, harness: 0.96-0.97x ->
// 1.00-1.01x the baseline); the same lines prefetched in a burst after each tile, or the next panel
// packed in pieces between rows of tiles, changed nothing (most likely because a burst fills the
// core's L1 miss buffers, which the next tile's loads then wait for; inferred, not measured).
struct RowPrefetch {
  const char* r0 = nullptr;
  const char* r1 = nullptr;
  int64_t lines = 0;
};

#if defined(__AVX512F__)
// c[0:R, 0:32] (+)= a(R x kc of a 14-row k-major sliver) * b(kc x 32, k-major, aligned). Intrinsics:
// with 32 zmm registers the compiler keeps all 2R accumulators in registers (checked in the
// disassembly); in L1 this reaches 87-90% of the FMA peak on the Xeon at R = 12-14. `accumulate` is
// false on the first K panel, so the (NaN-poisoned) output is never read before it is written.
template <int R>
__attribute__((noinline)) void tile(int64_t kc, const float* __restrict a, const float* __restrict b, float* __restrict c,
                                    int64_t ldc, bool accumulate, RowPrefetch pf = {}) {
  static_assert(R >= 1 && R <= MR, "1 to MR rows");
  __m512 lo[R], hi[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    lo[r] = _mm512_setzero_ps();
    hi[r] = _mm512_setzero_ps();
  }
  // Every cache line of the C tile (a row of 32 floats spans two): a line still in L3 or DRAM when
  // the epilogue reads or writes it stalls the kernel.
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + NR - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + VW);
    _mm_prefetch(reinterpret_cast<const char*>(a + 256), _MM_HINT_T0);  // the A sliver, 1 KiB ahead
    if ((k & 3) == 0 && pf.r0 != nullptr) {
      const int64_t q = k >> 2;
      if (q < pf.lines) _mm_prefetch(pf.r0 + 64 * q, _MM_HINT_T1);
      else if (q < 2 * pf.lines && pf.r1 != nullptr) _mm_prefetch(pf.r1 + 64 * (q - pf.lines), _MM_HINT_T1);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      lo[r] = _mm512_fmadd_ps(ar, b0, lo[r]);
      hi[r] = _mm512_fmadd_ps(ar, b1, hi[r]);
    }
    a += MR;
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
void tile_rows(int64_t rows, int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate, RowPrefetch pf) {
  if constexpr (R >= 1) {
    if (rows == R) return tile<R>(kc, a, b, c, ldc, accumulate, pf);
    tile_rows<R - 1>(rows, kc, a, b, c, ldc, accumulate, pf);
  }
}

// A tile of `rows` <= MR rows and all NR columns.
inline void full_width_tile(int64_t rows, int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                            bool accumulate, RowPrefetch pf = {}) {
  tile_rows<MR>(rows, kc, a, b, c, ldc, accumulate, pf);
}

// Partial tile: rows x cols valid; computed into a scratch tile and copied out.
__attribute__((noinline)) void edge_tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                         bool accumulate, int64_t rows, int64_t cols) {
  alignas(64) float edge[MR * NR];
  tile<MR>(kc, a, b, edge, NR, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q) c[r * ldc + q] = accumulate ? c[r * ldc + q] + edge[r * NR + q] : edge[r * NR + q];
}
#else
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

// A tile of `rows` <= MR rows and all NR columns.
inline void full_width_tile(int64_t rows, int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                            bool accumulate, RowPrefetch = {}) {
  switch (rows) {
    case 6: micro_kernel_full(kc, a, b, c, ldc, accumulate); break;
    case 5: micro_kernel_rows<5>(kc, a, b, c, ldc, accumulate); break;
    case 4: micro_kernel_rows<4>(kc, a, b, c, ldc, accumulate); break;
    case 3: micro_kernel_rows<3>(kc, a, b, c, ldc, accumulate); break;
    case 2: micro_kernel_rows<2>(kc, a, b, c, ldc, accumulate); break;
    default: micro_kernel_rows<1>(kc, a, b, c, ldc, accumulate); break;
  }
}

// Partial tile: rows x cols valid; computed into a scratch tile and copied out.
__attribute__((noinline)) void edge_tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                         bool accumulate, int64_t rows, int64_t cols) {
  alignas(64) float edge[MR * NR];
  micro_kernel_full(kc, a, b, edge, NR, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q) c[r * ldc + q] = accumulate ? c[r * ldc + q] + edge[r * NR + q] : edge[r * NR + q];
}
#endif

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

#if defined(__AVX512F__)
// Pack rows [0, mc) x k [0, kc) of A (leading dim lda) into MR-row slivers (k-major, zero rows pad
// the last sliver). Full slivers go 8 rows x 8 k at a time through a register transpose; the 6-row
// remainder group of a 14-row sliver is stored with a mask.
void pack_a(int64_t mc, int64_t kc, const float* __restrict A, int64_t lda, float* __restrict out) {
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int64_t rows = std::min(MR, mc - i0);
    const float* src = A + i0 * lda;
    int64_t k = 0;
    if (rows == MR) {
      for (; k + 8 <= kc; k += 8) {
        for (int64_t r0 = 0; r0 < MR; r0 += 8) {
          const int64_t nr = std::min<int64_t>(8, MR - r0);
          __m256 v[8];
          for (int q = 0; q < 8; ++q) v[q] = q < nr ? _mm256_loadu_ps(src + (r0 + q) * lda + k) : _mm256_setzero_ps();
          transpose8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
          const __mmask8 keep = __mmask8((1u << nr) - 1);
          for (int q = 0; q < 8; ++q) _mm256_mask_storeu_ps(out + (k + q) * MR + r0, keep, v[q]);
        }
      }
    }
    for (; k < kc; ++k) {
      for (int64_t r = 0; r < rows; ++r) out[k * MR + r] = src[r * lda + k];
      for (int64_t r = rows; r < MR; ++r) out[k * MR + r] = 0.0f;
    }
    out += MR * kc;
  }
}
#else
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
#endif

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

// One GEMM job (one group segment): C[0:m, 0:n] = A[0:m, 0:K] * B[0:K, 0:n].
struct Job {
  int64_t m = 0, n = 0, K = 0;
  const float* A = nullptr;
  int64_t lda = 0;
  const float* B = nullptr;
  int64_t ldb = 0;
  float* C = nullptr;
  int64_t ldc = 0;
  Blocking bl;
  const float* next_B = nullptr;  // rhs of the next job (for prefetching its first panel), if any
  int64_t mc_step() const {  // even MC blocks, so the last one is not a sliver
    const int64_t m_blocks = (m + bl.mc - 1) / bl.mc;
    return std::min(bl.mc, round_up((m + m_blocks - 1) / m_blocks, MR));
  }
  int64_t kc_step() const {  // even KC panels (a multiple of 8), so the last one is not thin
    const int64_t k_blocks = (K + bl.kc - 1) / bl.kc;
    return std::min(bl.kc, round_up((K + k_blocks - 1) / k_blocks, 8));
  }
};

// The rows x cols block of rhs (row stride ldb) that the next pack_b reads.
struct NextPanel {
  const float* src = nullptr;
  int64_t ldb = 0, rows = 0, cols = 0;
};

// The tiles of one packed A block (mc rows at row ic) against one packed B panel (nc columns at
// column jc). v4 walks A slivers outside (one stays in L1 while the B panel streams from L2); v3
// walks B slivers outside (one stays in L1/L2 while the A block streams). The rows of `np` are
// shared out over the tiles, one or two each, for the tiles to prefetch (v4; v3 ignores them).
void block_tiles(const Job& job, const float* a_pack, const float* b_pack, int64_t ic, int64_t mc, int64_t jc,
                 int64_t nc, int64_t kc, bool accumulate, NextPanel np = {}) {
  const int64_t n_slivers = (nc + NR - 1) / NR;
  const int64_t tiles = (mc + MR - 1) / MR * n_slivers;
  auto pf_for = [&](int64_t t) {
    RowPrefetch pf;
    if (np.src == nullptr) return pf;
    const int64_t r0 = np.rows * t / tiles, r1 = np.rows * (t + 1) / tiles;
    if (r1 <= r0) return pf;
    pf.lines = (np.cols * 4 + 63) / 64;
    pf.r0 = reinterpret_cast<const char*>(np.src + r0 * np.ldb);
    if (r1 - r0 >= 2) pf.r1 = reinterpret_cast<const char*>(np.src + (r0 + 1) * np.ldb);
    return pf;
  };
  auto one = [&](int64_t i0, int64_t s) {
    const int64_t rows = std::min(MR, mc - i0), j = jc + s * NR, cols = std::min(NR, job.n - j);
    const float* ap = a_pack + i0 * kc;
    const float* bp = b_pack + s * NR * kc;
    float* c = job.C + (ic + i0) * job.ldc + j;
    if (cols == NR)
      full_width_tile(rows, kc, ap, bp, c, job.ldc, accumulate, pf_for(i0 / MR * n_slivers + s));
    else
      edge_tile(kc, ap, bp, c, job.ldc, accumulate, rows, cols);
  };
#if defined(__AVX512F__)
  for (int64_t i0 = 0; i0 < mc; i0 += MR)
    for (int64_t s = 0; s < n_slivers; ++s) one(i0, s);
#else
  for (int64_t s = 0; s < n_slivers; ++s)
    for (int64_t i0 = 0; i0 < mc; i0 += MR) one(i0, s);
#endif
}

// Single-threaded blocked GEMM of `job`.
void gemm_st(const Job& job, float* a_pack, float* b_pack) {
  const int64_t m = job.m, n = job.n, K = job.K, lda = job.lda, ldb = job.ldb;
  const int64_t mc_step = job.mc_step(), kc_step = job.kc_step(), nc_step = job.bl.nc;
#if defined(__AVX512F__)
  // K panel -> A block (packed once) -> B panel.
  for (int64_t pc = 0; pc < K; pc += kc_step) {
    const int64_t kc = std::min(kc_step, K - pc);
    for (int64_t ic = 0; ic < m; ic += mc_step) {
      const int64_t mc = std::min(mc_step, m - ic);
      pack_a(mc, kc, job.A + ic * lda + pc, lda, a_pack);
      for (int64_t jc = 0; jc < n; jc += nc_step) {
        const int64_t nc = std::min(nc_step, n - jc);
        pack_b(kc, nc, job.B + pc * ldb + jc, ldb, b_pack);
        // What pack_b reads next: this K panel's next B panel, else (next A block) this K panel's
        // first, else the next K panel's first, else the next group's first.
        NextPanel np;
        if (jc + nc < n) np = {job.B + pc * ldb + jc + nc, ldb, kc, std::min(nc_step, n - jc - nc)};
        else if (ic + mc < m) np = {job.B + pc * ldb, ldb, kc, std::min(nc_step, n)};
        else if (pc + kc < K) np = {job.B + (pc + kc) * ldb, ldb, std::min(kc_step, K - pc - kc), std::min(nc_step, n)};
        else if (job.next_B != nullptr) np = {job.next_B, ldb, kc_step, std::min(nc_step, n)};
        block_tiles(job, a_pack, b_pack, ic, mc, jc, nc, kc, pc > 0, np);
      }
    }
  }
#else
  // B panel -> K panel -> A block.
  for (int64_t jc = 0; jc < n; jc += nc_step) {
    const int64_t nc = std::min(nc_step, n - jc);
    for (int64_t pc = 0; pc < K; pc += kc_step) {
      const int64_t kc = std::min(kc_step, K - pc);
      pack_b(kc, nc, job.B + pc * ldb + jc, ldb, b_pack);
      for (int64_t ic = 0; ic < m; ic += mc_step) {
        const int64_t mc = std::min(mc_step, m - ic);
        pack_a(mc, kc, job.A + ic * lda + pc, lda, a_pack);
        block_tiles(job, a_pack, b_pack, ic, mc, jc, nc, kc, pc > 0);
      }
    }
  }
#endif
}

float* align_up(void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((u + kAlign - 1) / kAlign * kAlign);
}

int32_t thread_count(const ob_call* call) { return std::max<int32_t>(1, call->num_threads); }

uint64_t scratch_bytes(const Blocking& bl, int64_t N, int32_t threads) {
  return uint64_t(thread_floats(bl, N)) * threads * sizeof(float) + kAlign;
}

}  // namespace

OB_DEFINE_ABI_VERSION()

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return scratch_bytes(blocking_for(call->inputs[0].shape[0]), call->inputs[1].shape[2], thread_count(call));
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t G = call->inputs[1].shape[0], N = call->inputs[1].shape[2];
  const float* lhs = static_cast<const float*>(call->inputs[0].data);
  const float* rhs = static_cast<const float*>(call->inputs[1].data);
  const int32_t* sizes = static_cast<const int32_t*>(call->inputs[2].data);
  float* out = static_cast<float*>(call->outputs[0].data);

  std::vector<int64_t> start(size_t(G) + 1, 0);
  for (int64_t g = 0; g < G; ++g) {
    if (sizes[g] < 0 || start[g] + sizes[g] > M) return 1;  // sizes must be >= 0 and sum to <= M
    start[g + 1] = start[g] + sizes[g];
  }
  const int64_t rows_total = start[G];
  if (N == 0) return 0;
  std::memset(out + rows_total * N, 0, size_t((M - rows_total) * N) * sizeof(float));
  if (rows_total == 0) return 0;
  if (K == 0) {
    std::memset(out, 0, size_t(rows_total * N) * sizeof(float));
    return 0;
  }

  // Cut the rows [0, rows_total) into one range per thread, balanced by cost: a group costs its
  // rows plus PACK_ROWS (packing its weights). A cut that would leave a piece of a group smaller
  // than a few micro-tiles snaps to the group boundary.
  const int32_t threads = int32_t(std::min<int64_t>(thread_count(call), (rows_total + MR - 1) / MR));
  std::vector<int64_t> cut(size_t(threads) + 1, 0);
  {
    double total = 0;
    for (int64_t g = 0; g < G; ++g) if (sizes[g] > 0) total += double(sizes[g]) + PACK_ROWS;
    const int64_t snap = 4 * MR;
    int64_t g = 0;
    double before = 0;  // cost of the groups before g
    for (int32_t t = 1; t < threads; ++t) {
      const double pos = total * t / threads;
      while (g < G && (sizes[g] == 0 || before + sizes[g] + PACK_ROWS <= pos)) {
        if (sizes[g] > 0) before += double(sizes[g]) + PACK_ROWS;
        ++g;
      }
      int64_t c = rows_total;
      if (g < G) {
        int64_t r = int64_t(pos - before - PACK_ROWS + 0.5);
        r = std::max<int64_t>(0, std::min<int64_t>(sizes[g], r));
        if (r < snap) r = 0;
        else if (sizes[g] - r < snap) r = sizes[g];
        c = start[g] + r;
      }
      cut[t] = std::max(cut[t - 1], c);
    }
    cut[threads] = rows_total;
  }

  const Blocking bl = blocking_for(M);
  const uint64_t need = scratch_bytes(bl, N, threads);
  void* heap = nullptr;
  void* scratch = call->workspace;
  if (scratch == nullptr || call->workspace_bytes < need) {
    heap = std::malloc(need);
    if (heap == nullptr) return 1;
    scratch = heap;
  }
  float* base = align_up(scratch);
  const int64_t per = thread_floats(bl, N);

#pragma omp parallel num_threads(threads)
  {
    const int64_t tid = omp_get_thread_num(), team = omp_get_num_threads();
    float* a_pack = base + tid * per;
    float* b_pack = a_pack + a_block_floats(bl);  // 64-byte aligned: both sizes are multiples of 16
    for (int64_t t = tid; t < threads; t += team) {  // one range per thread unless the team is short
      const int64_t r0 = cut[t], r1 = cut[t + 1];
      if (r0 >= r1) continue;
      const int64_t g0 = std::upper_bound(start.begin(), start.end(), r0) - start.begin() - 1;
      for (int64_t g = g0; g < G && start[g] < r1; ++g) {
        const int64_t lo = std::max(r0, start[g]), hi = std::min(r1, start[g + 1]);
        if (lo >= hi) continue;  // empty group
        Job job;
        job.m = hi - lo, job.n = N, job.K = K, job.A = lhs + lo * K, job.lda = K;
        job.B = rhs + g * K * N, job.ldb = N, job.C = out + lo * N, job.ldc = N;
        job.bl = bl;
        int64_t g2 = g + 1;  // the next group with rows in this thread's range
        while (g2 < G && start[g2] < r1 && sizes[g2] == 0) ++g2;
        if (g2 < G && start[g2] < r1) job.next_B = rhs + g2 * K * N;
        gemm_st(job, a_pack, b_pack);
      }
    }
  }
  std::free(heap);
  return 0;
}
