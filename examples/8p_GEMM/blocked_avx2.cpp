// 8p_GEMM example: a cache-blocked, packed GEMM in the style of BLIS/GotoBLAS.
//
// What it shows:
//  - the classic three-level blocking: NC columns of B (L3), KC deep panels (L1/L2), MC rows of A (L2);
//  - packing A into MR-row slivers and B into NR-column slivers, zero-padded, so the inner kernel
//    always streams contiguous memory and never needs a remainder case;
//  - a 6x16 AVX2/FMA register-blocked micro-kernel (12 ymm accumulators, 2 B loads + 6 broadcasts
//    per k step);
//  - remainders: edge tiles (M % 6, N % 16) are computed into a small scratch tile and only the valid
//    part is written back, so any M, K, N works (K = 0 gives C = 0);
//  - OpenMP over MC-row blocks of C inside one parallel region; the shared B panel is packed by all
//    threads together, each thread packs its own A block;
//  - scratch comes from the harness workspace (ob_workspace_bytes), with a malloc fallback.
// Accumulation is fp32, as in the workload description.
#include <opbench/kernel.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "blocked_avx2.cpp needs AVX2 and FMA (build with -mavx2 -mfma or -march=native)"
#endif

namespace {

constexpr int64_t MR = 6;     // rows of C per micro-tile
constexpr int64_t NR = 16;    // columns of C per micro-tile (two ymm registers)
constexpr int64_t KC = 256;   // depth of a packed panel: a 16 KiB B sliver plus a 6 KiB A sliver in L1
constexpr int64_t MC = 144;   // most rows of A packed per thread: 144 KiB, lives in L2
constexpr int64_t NC = 4096;  // columns of B packed at once: 4 MiB, lives in L3

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
constexpr int64_t kAlign = 64;

// Floats of scratch: one packed B panel, plus one packed A block per thread.
int64_t b_panel_floats(int64_t N) { return KC * round_up(std::min(N, NC), NR); }
int64_t a_block_floats() { return round_up(MC, MR) * KC; }
uint64_t scratch_bytes(int64_t N, int32_t threads) {
  const int64_t floats = b_panel_floats(N) + int64_t(threads) * a_block_floats();
  return uint64_t(floats) * sizeof(float) + 2 * kAlign;
}

// C[0:6, 0:16] (+)= Apack(6 x kc) * Bpack(kc x 16). Apack holds, for each k, the 6 values of column
// k; Bpack holds, for each k, the 16 values of row k. `accumulate` is false on the first K panel,
// so the (NaN-poisoned) output is never read before it is written.
void micro_kernel_6x16(int64_t kc, const float* __restrict a, const float* __restrict b,
                       float* __restrict c, int64_t ldc, bool accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    __m256 ak;
    ak = _mm256_broadcast_ss(a + 0); c00 = _mm256_fmadd_ps(ak, b0, c00); c01 = _mm256_fmadd_ps(ak, b1, c01);
    ak = _mm256_broadcast_ss(a + 1); c10 = _mm256_fmadd_ps(ak, b0, c10); c11 = _mm256_fmadd_ps(ak, b1, c11);
    ak = _mm256_broadcast_ss(a + 2); c20 = _mm256_fmadd_ps(ak, b0, c20); c21 = _mm256_fmadd_ps(ak, b1, c21);
    ak = _mm256_broadcast_ss(a + 3); c30 = _mm256_fmadd_ps(ak, b0, c30); c31 = _mm256_fmadd_ps(ak, b1, c31);
    ak = _mm256_broadcast_ss(a + 4); c40 = _mm256_fmadd_ps(ak, b0, c40); c41 = _mm256_fmadd_ps(ak, b1, c41);
    ak = _mm256_broadcast_ss(a + 5); c50 = _mm256_fmadd_ps(ak, b0, c50); c51 = _mm256_fmadd_ps(ak, b1, c51);
    a += MR;
    b += NR;
  }
  const __m256 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int64_t r = 0; r < MR; ++r) {
    float* cr = c + r * ldc;
    __m256 lo = acc[r][0], hi = acc[r][1];
    if (accumulate) {
      lo = _mm256_add_ps(lo, _mm256_loadu_ps(cr));
      hi = _mm256_add_ps(hi, _mm256_loadu_ps(cr + 8));
    }
    _mm256_storeu_ps(cr, lo);
    _mm256_storeu_ps(cr + 8, hi);
  }
}

// Pack rows [0, mc) x columns [0, kc) of A (leading dimension lda) into 6-row slivers, padding the
// last sliver with zero rows.
void pack_a(int64_t mc, int64_t kc, const float* __restrict A, int64_t lda, float* __restrict out) {
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int64_t rows = std::min(MR, mc - i0);
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t r = 0; r < rows; ++r) out[k * MR + r] = A[(i0 + r) * lda + k];
      for (int64_t r = rows; r < MR; ++r) out[k * MR + r] = 0.0f;
    }
    out += MR * kc;
  }
}

// Pack one 16-column sliver (columns [0, cols) of B, rows [0, kc)), padding with zero columns.
void pack_b_sliver(int64_t kc, int64_t cols, const float* __restrict B, int64_t ldb,
                   float* __restrict out) {
  for (int64_t k = 0; k < kc; ++k) {
    const float* src = B + k * ldb;
    float* dst = out + k * NR;
    if (cols == NR) {
      _mm256_store_ps(dst, _mm256_loadu_ps(src));
      _mm256_store_ps(dst + 8, _mm256_loadu_ps(src + 8));
    } else {
      for (int64_t j = 0; j < cols; ++j) dst[j] = src[j];
      for (int64_t j = cols; j < NR; ++j) dst[j] = 0.0f;
    }
  }
}

float* align_up(void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((u + kAlign - 1) / kAlign * kAlign);
}

int32_t thread_count(const ob_call* call) { return std::max<int32_t>(1, call->num_threads); }

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
  if (K == 0) {  // empty sum
    std::fill(C, C + M * N, 0.0f);
    return 0;
  }

  const int32_t threads = thread_count(call);
  const uint64_t need = scratch_bytes(N, threads);
  void* heap = nullptr;  // only if the caller gave us less workspace than we asked for
  void* scratch = call->workspace;
  if (scratch == nullptr || call->workspace_bytes < need) {
    heap = std::malloc(need);
    if (heap == nullptr) return 1;
    scratch = heap;
  }
  float* b_pack = align_up(scratch);
  float* a_pack_all = b_pack + b_panel_floats(N);

  // Split M into row blocks of at most MC rows, a multiple of the thread count where possible so
  // that every thread gets the same number of blocks.
  int64_t blocks = (M + MC - 1) / MC;
  blocks = round_up(blocks, threads);
  const int64_t mc_step = std::min(MC, round_up((M + blocks - 1) / blocks, MR));
  const int64_t m_blocks = (M + mc_step - 1) / mc_step;

#pragma omp parallel num_threads(threads)
  {
    float* a_pack = a_pack_all + int64_t(omp_get_thread_num()) * a_block_floats();
    alignas(32) float edge[MR * NR];  // scratch tile for partial micro-tiles

    for (int64_t jc = 0; jc < N; jc += NC) {
      const int64_t nc = std::min(NC, N - jc);
      const int64_t n_slivers = (nc + NR - 1) / NR;
      for (int64_t pc = 0; pc < K; pc += KC) {
        const int64_t kc = std::min(KC, K - pc);
        const bool accumulate = pc > 0;

        // All threads pack the shared B panel together (implicit barrier at the end).
#pragma omp for schedule(static)
        for (int64_t s = 0; s < n_slivers; ++s) {
          pack_b_sliver(kc, std::min(NR, nc - s * NR), B + pc * N + jc + s * NR, N,
                        b_pack + s * NR * kc);
        }

        // Each thread takes whole MC-row blocks of C: pack its A block, then sweep the B panel.
#pragma omp for schedule(static)
        for (int64_t blk = 0; blk < m_blocks; ++blk) {
          const int64_t ic = blk * mc_step;
          const int64_t mc = std::min(mc_step, M - ic);
          pack_a(mc, kc, A + ic * K + pc, K, a_pack);
          for (int64_t s = 0; s < n_slivers; ++s) {
            const int64_t j = jc + s * NR;
            const int64_t cols = std::min(NR, N - j);
            const float* bp = b_pack + s * NR * kc;
            for (int64_t i0 = 0; i0 < mc; i0 += MR) {
              const int64_t rows = std::min(MR, mc - i0);
              const float* ap = a_pack + i0 * kc;
              float* c = C + (ic + i0) * N + j;
              if (rows == MR && cols == NR) {
                micro_kernel_6x16(kc, ap, bp, c, N, accumulate);
              } else {
                micro_kernel_6x16(kc, ap, bp, edge, NR, false);
                for (int64_t r = 0; r < rows; ++r) {
                  for (int64_t q = 0; q < cols; ++q) {
                    c[r * N + q] = accumulate ? c[r * N + q] + edge[r * NR + q] : edge[r * NR + q];
                  }
                }
              }
            }
          }
        }  // implicit barrier: the B panel is not repacked while someone still reads it
      }
    }
  }
  std::free(heap);
  return 0;
}
