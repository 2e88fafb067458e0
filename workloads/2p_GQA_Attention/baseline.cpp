// 2p_GQA_Attention baseline: what a compiler without a fused attention kernel emits, as in
// 1p_Flash_Attention: per (batch, query head, block of query rows) a vendor SGEMM for the scores,
// one fused mask + softmax loop, and an SGEMM with V. The [B, S, H, D] layout is read in place through
// the leading dimensions (no transposes), and each query head indexes its shared kv head (no G-fold
// copy of k and v). The full S×S products are computed; only the softmax skips masked entries.
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
  const int64_t S = call->inputs[0].shape[1];
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

// Row i of the scores: masked entries (j > i) would be -1e9, whose exp is exactly 0 in fp32.
static inline void causal_softmax_row(float* __restrict row, int64_t i, int64_t S) {
  float m = row[0];
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j <= i; ++j) m = row[j] > m ? row[j] : m;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j <= i; ++j) {
    row[j] = vexp(row[j] - m);
    sum += row[j];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
  for (int64_t j = i + 1; j < S; ++j) row[j] = 0.0f;
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], S = q.shape[1], Hq = q.shape[2], D = q.shape[3];
  const int64_t Hkv = call->inputs[1].shape[2];
  const int64_t G = Hq / Hkv;
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  float* workspace = static_cast<float*>(call->workspace);
  const float scale = 1.0f / std::sqrt(float(D));
  const int ldq = int(Hq * D), ldkv = int(Hkv * D);
  // Parallel over (batch, query head, block of 128 query rows) with single-threaded SGEMMs inside
  // (the vendor SGEMM runs serially inside an OpenMP region); consecutive tasks share a kv head.
  const int64_t blocks = (S + kRowsPerBlock - 1) / kRowsPerBlock;
#pragma omp parallel num_threads(call->num_threads)
  {
    float* P = workspace + int64_t(omp_get_thread_num()) * kRowsPerBlock * S;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < B * Hq * blocks; ++t) {
      const int64_t bh = t / blocks, i0 = (t % blocks) * kRowsPerBlock;
      const int64_t b = bh / Hq, h = bh % Hq, g = h / G;
      const int rows = int(std::min(kRowsPerBlock, S - i0));
      const float* Qb = Q + ((b * S + i0) * Hq + h) * D;
      const float* Kh = K + (b * S * Hkv + g) * D;
      const float* Vh = V + (b * S * Hkv + g) * D;
      ob_vendor_sgemm('N', 'T', rows, int(S), int(D), scale, Qb, ldq, Kh, ldkv,
                  0.0f, P, int(S));
      for (int64_t r = 0; r < rows; ++r) causal_softmax_row(P + r * S, i0 + r, S);
      ob_vendor_sgemm('N', 'N', rows, int(D), int(S), 1.0f, P, int(S), Vh, ldkv,
                  0.0f, O + ((b * S + i0) * Hq + h) * D, ldq);
    }
  }
  return 0;
}
