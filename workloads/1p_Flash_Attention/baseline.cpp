// 1p_Flash_Attention baseline: what a compiler without a fused attention kernel emits: a batched
// vendor SGEMM for the scores into a (B, H, S, S) buffer, one fused mask + softmax loop, and a
// batched SGEMM with V. The full S×S products are computed; only the softmax skips masked entries.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <algorithm>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// The materialised score/probability matrix of every head.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  return uint64_t(q.shape[0] * q.shape[1]) * uint64_t(q.shape[2] * q.shape[2]) * sizeof(float);
}

// exp as compilers emit it for fused loops: XLA and PyTorch use a vectorized polynomial, while glibc's
// expf is scalar without -ffast-math (26 ms instead of 20 ms at the cpu size on 2 threads). Cephes
// range reduction and polynomial, relative error < 1e-7 on [-87, 88]; written so that `omp simd`
// vectorizes it.
static inline float vexp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  // n = round(x/ln2) by the 1.5·2^23 trick, x = n·ln2 + r with |r| ≤ ln2/2. Uses of x and n go through
  // std::fma: GCC's if-conversion then keeps the clamp a vector select under -ftrapping-math (with a
  // plain multiply, or std::nearbyint, the loop stays scalar at -march=x86-64-v3).
  const float n = std::fma(x, 1.44269504f, 12582912.0f) - 12582912.0f;
  const float r = std::fma(n, 2.12194440e-4f, std::fma(n, -0.693359375f, x));
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r) + 1.0f;                           // e^r ≈ 1 + r + r²·p(r)
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);  // · 2^n
}

// Row i of the scores: masked entries (j > i) would be -1e9, whose exp is exactly 0 in fp32.
static inline void causal_softmax_row(float* __restrict row, int64_t i, int64_t S) {
  float m = row[0];
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j <= i; ++j) m = row[j] > m ? row[j] : m;  // std::max stays scalar here
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
  float* O = static_cast<float*>(call->outputs[0].data);
  float* P = static_cast<float*>(call->workspace);
  const float scale = 1.0f / std::sqrt(float(D));
  // Parallel over (head, block of 128 query rows) with single-threaded SGEMMs inside (the vendor SGEMM runs
  // serially inside an OpenMP region): a block's scores (128×S) stay in L2 between the three steps.
  // Measured at the cpu size on 2 threads: 20 ms, as fast as one task per head or threaded SGEMMs per
  // head (20-21 ms) and faster than three separate phases over all heads (22-27 ms). Blocks rather
  // than whole heads keep every thread busy when B·H < num_threads.
  const int64_t rows_per_block = 128, blocks = (S + rows_per_block - 1) / rows_per_block;
#pragma omp parallel for schedule(dynamic, 1) num_threads(call->num_threads)
  for (int64_t t = 0; t < B * H * blocks; ++t) {
    const int64_t bh = t / blocks, i0 = (t % blocks) * rows_per_block;
    const int rows = int(std::min(rows_per_block, S - i0));
    const float* Qb = Q + (bh * S + i0) * D;
    const float* Kh = K + bh * S * D;
    const float* Vh = V + bh * S * D;
    float* Pb = P + (bh * S + i0) * S;
    ob_vendor_sgemm('N', 'T', rows, int(S), int(D), scale, Qb, int(D), Kh,
                int(D), 0.0f, Pb, int(S));
    for (int64_t r = 0; r < rows; ++r) causal_softmax_row(Pb + r * S, i0 + r, S);
    ob_vendor_sgemm('N', 'N', rows, int(D), int(S), 1.0f, Pb, int(S), Vh,
                int(D), 0.0f, O + (bh * S + i0) * D, int(D));
  }
  return 0;
}
