// 3p_MLA_Attention baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits. Every projection is one SGEMM over all
// B·S tokens (the latent slice of c is read in place through its leading dimension); RoPE and the
// assembly of the per-head key [k_nope ‖ rope(kr)] (XLA's concat of the broadcast rope key) are one
// fused loop; attention follows 1p_Flash_Attention: per (batch, head, block of query rows) an SGEMM for
// the scores, a fused mask + softmax loop and an SGEMM with V; the output projection is one SGEMM.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <omp.h>
#include <algorithm>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

static constexpr int64_t kRowsPerBlock = 128;

struct Dims {
  int64_t B, S, E, RQ, RKV, H, DN, DR, DV;
};

static Dims dims_of(const ob_call* call) {
  Dims d;
  d.B = call->inputs[0].shape[0];
  d.S = call->inputs[0].shape[1];
  d.E = call->inputs[0].shape[2];
  d.RQ = call->inputs[1].shape[1];
  d.RKV = call->inputs[4].shape[0];
  d.DR = call->inputs[3].shape[1] - d.RKV;
  d.H = (call->inputs[2].shape[1] - call->inputs[4].shape[1]) / d.DR;
  d.DN = call->inputs[4].shape[1] / d.H;
  d.DV = call->inputs[5].shape[1] / d.H;
  return d;
}

// Floats of the intermediates: cq (T×RQ), q (T×H·W), c (T×(RKV+DR)), k_nope (T×H·DN), the assembled
// keys (T×H·W), v and O (T×H·DV each), the cos/sin table (S×DR); then one score block per thread.
static int64_t intermediate_floats(const Dims& d) {
  const int64_t T = d.B * d.S, W = d.DN + d.DR;
  return T * (d.RQ + 2 * d.H * W + d.RKV + d.DR + d.H * d.DN + 2 * d.H * d.DV) + d.S * d.DR;
}

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const Dims d = dims_of(call);
  const int64_t n = (intermediate_floats(d) + 15) / 16 * 16 + std::max(call->num_threads, 1) * kRowsPerBlock * d.S;
  return uint64_t(n) * sizeof(float);
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

// Rotate-half RoPE of the DR-vector u in place (half = DR/2 pairs), with the cos/sin of its position.
// Iteration j touches only u[j] and u[j + half], so the loop is safe to vectorize.
static inline void rope_in_place(float* u, const float* __restrict cs, const float* __restrict sn, int64_t half) {
#pragma omp simd
  for (int64_t j = 0; j < half; ++j) {
    const float a = u[j], b = u[j + half];
    u[j] = a * cs[j] - b * sn[j];
    u[j + half] = b * cs[j] + a * sn[j];
  }
}

static void gemm(int M, int N, int K, const float* A, int lda, const float* Bm, int ldb, float* C, int ldc) {
  ob_vendor_sgemm('N', 'N', M, N, K, 1.0f, A, lda, Bm, ldb, 0.0f, C, ldc);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const Dims d = dims_of(call);
  const int64_t T = d.B * d.S, W = d.DN + d.DR, half = d.DR / 2, C = d.RKV + d.DR;
  const int64_t HW = d.H * W, HN = d.H * d.DN, HV = d.H * d.DV;
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* Wqd = static_cast<const float*>(call->inputs[1].data);
  const float* Wqu = static_cast<const float*>(call->inputs[2].data);
  const float* Wkvd = static_cast<const float*>(call->inputs[3].data);
  const float* Wku = static_cast<const float*>(call->inputs[4].data);
  const float* Wvu = static_cast<const float*>(call->inputs[5].data);
  const float* Wo = static_cast<const float*>(call->inputs[6].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  float* cq = static_cast<float*>(call->workspace);
  float* q = cq + T * d.RQ;        // (T, H, W): [q_nope ‖ q_rope], q_rope rotated in place
  float* c = q + T * HW;           // (T, RKV + DR): [latent ‖ kr]
  float* kn = c + T * C;           // (T, H, DN)
  float* k = kn + T * HN;          // (T, H, W): [k_nope ‖ rope(kr)]
  float* v = k + T * HW;           // (T, H, DV)
  float* o = v + T * HV;           // (T, H, DV)
  float* cosines = o + T * HV;     // (S, half)
  float* sines = cosines + d.S * half;
  float* blocks_ws = static_cast<float*>(call->workspace) + (intermediate_floats(d) + 15) / 16 * 16;

  gemm(int(T), int(d.RQ), int(d.E), X, int(d.E), Wqd, int(d.RQ), cq, int(d.RQ));
  gemm(int(T), int(HW), int(d.RQ), cq, int(d.RQ), Wqu, int(HW), q, int(HW));
  gemm(int(T), int(C), int(d.E), X, int(d.E), Wkvd, int(C), c, int(C));
  gemm(int(T), int(HN), int(d.RKV), c, int(C), Wku, int(HN), kn, int(HN));
  gemm(int(T), int(HV), int(d.RKV), c, int(C), Wvu, int(HV), v, int(HV));

  // The angles in double (JAX uses fp32; double keeps the baseline's RoPE within 1e-7 of the reference).
  for (int64_t s = 0; s < d.S; ++s)
    for (int64_t j = 0; j < half; ++j) {
      const double angle = double(s) * std::pow(10000.0, -2.0 * double(j) / double(d.DR));
      cosines[s * half + j] = float(std::cos(angle));
      sines[s * half + j] = float(std::sin(angle));
    }
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t t = 0; t < T; ++t) {
    const float* cs = cosines + (t % d.S) * half;
    const float* sn = sines + (t % d.S) * half;
    float* kr = c + t * C + d.RKV;
    rope_in_place(kr, cs, sn, half);
    for (int64_t h = 0; h < d.H; ++h) {
      rope_in_place(q + t * HW + h * W + d.DN, cs, sn, half);
      float* kh = k + t * HW + h * W;
      std::copy(kn + t * HN + h * d.DN, kn + t * HN + (h + 1) * d.DN, kh);
      std::copy(kr, kr + d.DR, kh + d.DN);
    }
  }

  const float scale = 1.0f / std::sqrt(float(W));
  const int64_t blocks = (d.S + kRowsPerBlock - 1) / kRowsPerBlock;
#pragma omp parallel num_threads(call->num_threads)
  {
    float* P = blocks_ws + int64_t(omp_get_thread_num()) * kRowsPerBlock * d.S;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < d.B * d.H * blocks; ++t) {
      const int64_t bh = t / blocks, i0 = (t % blocks) * kRowsPerBlock;
      const int64_t b = bh / d.H, h = bh % d.H;
      const int rows = int(std::min(kRowsPerBlock, d.S - i0));
      ob_vendor_sgemm('N', 'T', rows, int(d.S), int(W), scale,
                  q + (b * d.S + i0) * HW + h * W, int(HW), k + b * d.S * HW + h * W, int(HW), 0.0f, P, int(d.S));
      for (int64_t r = 0; r < rows; ++r) causal_softmax_row(P + r * d.S, i0 + r, d.S);
      ob_vendor_sgemm('N', 'N', rows, int(d.DV), int(d.S), 1.0f, P, int(d.S),
                  v + b * d.S * HV + h * d.DV, int(HV), 0.0f, o + (b * d.S + i0) * HV + h * d.DV, int(HV));
    }
  }

  gemm(int(T), int(d.E), int(HV), o, int(HV), Wo, int(d.E), Out, int(d.E));
  return 0;
}
