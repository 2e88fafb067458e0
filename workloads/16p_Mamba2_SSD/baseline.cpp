// 16p_Mamba2_SSD baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits for the quadratic SSD form: one loop for
// the running sums c = cumsum(ln(sigmoid(A_log) + 1e-8)) of every head, then per block of query rows
// one SGEMM for q·kᵀ against the keys the block can see (j < end of block), one fused loop that applies
// the decay exp(c_i - c_j) and the causal zeroing and sums each row, one SGEMM with v, and the row
// normalisation 1/max(|σ|, 1) applied to the output rows.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <omp.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

constexpr int64_t kRows = 128;  // query rows per block

// The running sums of every head (B·H·S doubles), then per thread the block's weights (128 × S), its
// rebased running sums (S) and row scales (128).
static int64_t per_thread_floats(int64_t S) { return (kRows * S + S + kRows + 15) / 16 * 16; }

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t BH = q.shape[0] * q.shape[1], S = q.shape[2];
  return uint64_t(BH * S) * sizeof(double) + uint64_t(call->num_threads * per_thread_floats(S)) * sizeof(float);
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
  const float* A_log = static_cast<const float*>(call->inputs[3].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  double* C = static_cast<double*>(call->workspace);  // (B·H, S) running sums
  float* scratch = reinterpret_cast<float*>(C + B * H * S);
  // The scan, in double, sequential along S and parallel over heads (B·H·S scalar exp and log, < 1 % of
  // the time). Rows whose σ cancels (Σ|G|/|σ| up to ≈ 1000) amplify any relative error of L[i, j] that
  // varies with j: in fp32, ln(a) near a = 1 is off by up to ≈ 3e-8 per step (and a + 1e-8 rounds to
  // a), which drifts c_i - c_j by ≈ 1e-5 over a few hundred steps and moves such rows by ≈ 1e-4
  // relative. c reaches ≈ -0.01·S, so it is kept in double and rebased per row block below.
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    double run = 0.0;
    for (int64_t t = 0; t < S; ++t) {
      const double a = 1.0 / (1.0 + std::exp(-double(A_log[bh * S + t])));
      run += std::log(a + 1e-8);
      C[bh * S + t] = run;
    }
  }
  const int64_t blocks = (S + kRows - 1) / kRows;
  // Parallel over (head, row block), later (longer) blocks first; single-threaded SGEMMs inside.
#pragma omp parallel for schedule(dynamic, 1) num_threads(call->num_threads)
  for (int64_t t = 0; t < B * H * blocks; ++t) {
    const int64_t bh = t / blocks, i0 = (blocks - 1 - t % blocks) * kRows;
    const int64_t rows = S - i0 < kRows ? S - i0 : kRows, n = i0 + rows;  // keys j < n
    float* G = scratch + omp_get_thread_num() * per_thread_floats(S);
    float* c = G + kRows * S;  // c_j - c_{i0}: exact near the block, where L matters
    float* scale = c + S;
    for (int64_t j = 0; j < n; ++j) c[j] = float(C[bh * S + j] - C[bh * S + i0]);
    const int64_t head = bh * S * D;
    ob_vendor_sgemm('N', 'T', int(rows), int(n), int(D), 1.0f, Q + head + i0 * D,
                int(D), K + head, int(D), 0.0f, G, int(n));
    for (int64_t r = 0; r < rows; ++r) {
      float* __restrict g = G + r * n;
      const int64_t i = i0 + r;
      const float ci = c[i];
      // σ is a cancelling sum (Σ|G|/|σ| reaches ≈ 1000): an fp32 accumulator loses ≈ 3 digits, so double.
      double sigma = 0.0;
#pragma omp simd reduction(+ : sigma)
      for (int64_t j = 0; j <= i; ++j) {
        g[j] *= vexp(ci - c[j]);
        sigma += double(g[j]);
      }
      for (int64_t j = i + 1; j < n; ++j) g[j] = 0.0f;
      const double mag = std::fabs(sigma);  // |σ| < 1e-6 → σ = 1: divided by 1 either way
      scale[r] = float(1.0 / (mag > 1.0 ? mag : 1.0));
    }
    float* Ob = O + head + i0 * D;
    ob_vendor_sgemm('N', 'N', int(rows), int(D), int(n), 1.0f, G, int(n), V + head,
                int(D), 0.0f, Ob, int(D));
    for (int64_t r = 0; r < rows; ++r) {
      const float s = scale[r];
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) Ob[r * D + d] *= s;
    }
  }
  return 0;
}
