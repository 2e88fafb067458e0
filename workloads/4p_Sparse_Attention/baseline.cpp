// 4p_Sparse_Attention baseline: what a compiler without a sparse attention kernel emits (JAX computes
// the dense scores and masks them), as in 1p_Flash_Attention: per (batch, query head, block of query
// rows) a vendor SGEMM for the S×S scores, one fused mask + softmax loop over the kept ranges, and
// an SGEMM with V. Each query head indexes its shared kv head (no copy of k and v).
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <omp.h>
#include <algorithm>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

static constexpr int64_t kRowsPerBlock = 128;

// One block of scores/probabilities (kRowsPerBlock × S) per thread.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t S = call->inputs[0].shape[2];
  return uint64_t(std::max(call->num_threads, 1)) * uint64_t(kRowsPerBlock * S) * sizeof(float);
}

// Vectorizable exp (copied from 1p_Flash_Attention: glibc's expf keeps the loop scalar). Cephes range
// reduction and polynomial, relative error < 1e-7 on [-87, 88].
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

static inline float range_max(const float* __restrict row, int64_t lo, int64_t hi, float m) {
#pragma omp simd reduction(max : m)
  for (int64_t j = lo; j < hi; ++j) m = row[j] > m ? row[j] : m;  // std::max stays scalar here
  return m;
}

static inline float range_exp(float* __restrict row, int64_t lo, int64_t hi, float m) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = lo; j < hi; ++j) {
    row[j] = vexp(row[j] - m);
    sum += row[j];
  }
  return sum;
}

static inline void range_scale(float* __restrict row, int64_t lo, int64_t hi, float s) {
#pragma omp simd
  for (int64_t j = lo; j < hi; ++j) row[j] *= s;
}

// Row i of the scores. Kept keys are the globals [0, ge) and the window [ws, i]; every other entry
// would be -1e30, whose exp is exactly 0 in fp32.
static inline void sparse_softmax_row(float* __restrict row, int64_t i, int64_t S, int64_t W, int64_t G) {
  const int64_t ws = std::max<int64_t>(0, i - W + 1), ge = std::min(G, ws);
  float m = -INFINITY;
  m = range_max(row, 0, ge, m);
  m = range_max(row, ws, i + 1, m);
  const float sum = range_exp(row, 0, ge, m) + range_exp(row, ws, i + 1, m);
  const float inv = 1.0f / sum;
  range_scale(row, 0, ge, inv);
  range_scale(row, ws, i + 1, inv);
  std::fill(row + ge, row + ws, 0.0f);
  std::fill(row + i + 1, row + S, 0.0f);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], Hq = q.shape[1], S = q.shape[2], D = q.shape[3];
  const int64_t Hkv = call->inputs[1].shape[1];
  const int64_t group = Hq / Hkv;
  const int64_t W = S / 4, G = S / 32;
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  float* workspace = static_cast<float*>(call->workspace);
  // Parallel over (batch, query head, block of 128 query rows) with single-threaded SGEMMs inside
  // (the vendor SGEMM runs serially inside an OpenMP region); consecutive tasks share a kv head.
  const int64_t blocks = (S + kRowsPerBlock - 1) / kRowsPerBlock;
#pragma omp parallel num_threads(call->num_threads)
  {
    float* P = workspace + int64_t(omp_get_thread_num()) * kRowsPerBlock * S;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < B * Hq * blocks; ++t) {
      const int64_t bh = t / blocks, i0 = (t % blocks) * kRowsPerBlock;
      const int64_t b = bh / Hq, h = bh % Hq;
      const int rows = int(std::min(kRowsPerBlock, S - i0));
      const float* Kh = K + (b * Hkv + h / group) * S * D;
      const float* Vh = V + (b * Hkv + h / group) * S * D;
      ob_vendor_sgemm('N', 'T', rows, int(S), int(D), 1.0f, Q + (bh * S + i0) * D,
                  int(D), Kh, int(D), 0.0f, P, int(S));
      for (int64_t r = 0; r < rows; ++r) sparse_softmax_row(P + r * S, i0 + r, S, W, G);
      ob_vendor_sgemm('N', 'N', rows, int(D), int(S), 1.0f, P, int(S), Vh, int(D),
                  0.0f, O + (bh * S + i0) * D, int(D));
    }
  }
  return 0;
}
