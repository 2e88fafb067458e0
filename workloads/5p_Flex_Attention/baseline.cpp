// 5p_Flex_Attention baseline: what a compiler without a fused attention kernel emits, as in
// 1p_Flash_Attention: per (batch, head, block of query rows) a vendor SGEMM for the scaled scores,
// one fused bias + mask + softmax loop, and an SGEMM with V. The full S×S products are computed; only
// the softmax skips masked entries (and so reads only the bias's lower triangle).
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

// Row i of the scores plus bias[h, i, :]: masked entries (j > i) would be -1e30, whose exp is exactly 0.
static inline void biased_causal_softmax_row(float* __restrict row, const float* __restrict bias, int64_t i,
                                             int64_t S) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j <= i; ++j) {
    row[j] += bias[j];
    m = row[j] > m ? row[j] : m;  // std::max stays scalar here
  }
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
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(call->inputs[1].data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  const float* Bias = static_cast<const float*>(call->inputs[3].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  float* workspace = static_cast<float*>(call->workspace);
  const float scale = 1.0f / std::sqrt(float(D));
  // Parallel over (head, block of 128 query rows, batch) with single-threaded SGEMMs inside (the vendor SGEMM
  // runs serially inside an OpenMP region). The batch is innermost so that the B tasks sharing a block
  // of bias rows run back to back and read it from cache after the first.
  const int64_t blocks = (S + kRowsPerBlock - 1) / kRowsPerBlock;
#pragma omp parallel num_threads(call->num_threads)
  {
    float* P = workspace + int64_t(omp_get_thread_num()) * kRowsPerBlock * S;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < B * H * blocks; ++t) {
      const int64_t b = t % B, i0 = (t / B % blocks) * kRowsPerBlock, h = t / (B * blocks), bh = b * H + h;
      const int rows = int(std::min(kRowsPerBlock, S - i0));
      const float* Kh = K + bh * S * D;
      const float* Vh = V + bh * S * D;
      ob_vendor_sgemm('N', 'T', rows, int(S), int(D), scale, Q + (bh * S + i0) * D,
                  int(D), Kh, int(D), 0.0f, P, int(S));
      for (int64_t r = 0; r < rows; ++r)
        biased_causal_softmax_row(P + r * S, Bias + (h * S + i0 + r) * S, i0 + r, S);
      ob_vendor_sgemm('N', 'N', rows, int(D), int(S), 1.0f, P, int(S), Vh, int(D),
                  0.0f, O + (bh * S + i0) * D, int(D));
    }
  }
  return 0;
}
