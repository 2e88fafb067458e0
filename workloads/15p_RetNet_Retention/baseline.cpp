// 15p_RetNet_Retention baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits for the parallel retention form,
// per block of query rows: one SGEMM for q·kᵀ against the keys the block can see (j < end of block),
// one fused loop that applies the decay γ^(i-j) and the causal zeroing and sums |A| per row, one SGEMM
// with v, and the row normalisation 1/max(Σ|A|, 1) applied to the output rows.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <omp.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

constexpr int64_t kRows = 128;  // query rows per block

// Per thread: the block's retention weights (128 × S) and its row scales.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t S = call->inputs[0].shape[2];
  return uint64_t(call->num_threads) * uint64_t(kRows * S + kRows) * sizeof(float);
}

// exp as compilers emit it for fused loops (see 1p_Flash_Attention): Cephes range reduction and
// polynomial, relative error < 1e-7 on [-87, 88], vectorizable under `omp simd`.
static inline float vexp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = std::fma(x, 1.44269504f, 12582912.0f) - 12582912.0f;
  const float r = std::fma(n, 2.12194440e-4f, std::fma(n, -0.693359375f, x));
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r) + 1.0f;
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  const int64_t blocks = (S + kRows - 1) / kRows;
  // Parallel over (head, row block), later (longer) blocks first; single-threaded SGEMMs inside.
#pragma omp parallel for schedule(dynamic, 1) num_threads(call->num_threads)
  for (int64_t t = 0; t < B * H * blocks; ++t) {
    const int64_t bh = t / blocks, i0 = (blocks - 1 - t % blocks) * kRows;
    const int64_t rows = S - i0 < kRows ? S - i0 : kRows, n = i0 + rows;  // keys j < n
    const float log_gamma = float(std::log1p(-std::ldexp(1.0, int(-5 - bh % H))));
    float* A = static_cast<float*>(call->workspace) + omp_get_thread_num() * (kRows * S + kRows);
    float* scale = A + kRows * S;
    const int64_t head = bh * S * D;
    ob_vendor_sgemm('N', 'T', int(rows), int(n), int(D), 1.0f, Q + head + i0 * D,
                int(D), K + head, int(D), 0.0f, A, int(n));
    for (int64_t r = 0; r < rows; ++r) {
      float* __restrict a = A + r * n;
      const int64_t i = i0 + r;
      float abs_sum = 0.0f;
#pragma omp simd reduction(+ : abs_sum)
      for (int64_t j = 0; j <= i; ++j) {
        a[j] *= vexp(log_gamma * float(i - j));
        abs_sum += std::fabs(a[j]);
      }
      for (int64_t j = i + 1; j < n; ++j) a[j] = 0.0f;
      scale[r] = 1.0f / (abs_sum > 1.0f ? abs_sum : 1.0f);
    }
    float* Ob = O + head + i0 * D;
    ob_vendor_sgemm('N', 'N', int(rows), int(D), int(n), 1.0f, A, int(n), V + head,
                int(D), 0.0f, Ob, int(D));
    for (int64_t r = 0; r < rows; ++r) {
      const float s = scale[r];
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) Ob[r * D + d] *= s;
    }
  }
  return 0;
}
