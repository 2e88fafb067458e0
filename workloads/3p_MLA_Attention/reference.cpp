// 3p_MLA_Attention reference: DeepSeek-V3 multi-head latent attention in double.
//   q = (x·Wqd)·Wqu, c = x·Wkvd = [latent ‖ kr], k_nope = latent·Wku, v = latent·Wvu,
//   RoPE (rotate-half) on q_rope and on the shared kr, causal softmax(Q·Kᵀ/√(DN+DR))·V per head, ·Wo.
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

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

// Intermediates in double: cq (T×RQ), q (T×H·(DN+DR)), c (T×(RKV+DR)), k_nope (T×H·DN), v and O
// (T×H·DV each), out (T×E), one row of S probabilities, and the cos/sin table (S×DR).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const Dims d = dims_of(call);
  const int64_t T = d.B * d.S;
  const int64_t n = T * (d.RQ + d.H * (d.DN + d.DR) + d.RKV + d.DR + d.H * d.DN + 2 * d.H * d.DV + d.E) +
                    d.S + d.S * d.DR;
  return uint64_t(n) * sizeof(double);
}

// C (M×N, row stride ldc) = A (M×K, row stride lda) · W (K×N, row stride ldw).
template <typename TA>
static void matmul(const TA* A, int64_t lda, const float* W, int64_t ldw, int64_t M, int64_t K, int64_t N,
                   double* C, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m) {
    double* c = C + m * ldc;
    for (int64_t n = 0; n < N; ++n) c[n] = 0.0;
    for (int64_t k = 0; k < K; ++k) {
      const double a = double(A[m * lda + k]);
      for (int64_t n = 0; n < N; ++n) c[n] += a * double(W[k * ldw + n]);
    }
  }
}

// Rotate-half RoPE of a DR-vector u in place, with the cos/sin of its position (half = DR/2 each).
static void rope(double* u, const double* cs, const double* sn, int64_t half) {
  for (int64_t j = 0; j < half; ++j) {
    const double a = u[j], b = u[j + half];
    u[j] = a * cs[j] - b * sn[j];
    u[j + half] = b * cs[j] + a * sn[j];
  }
}

extern "C" int32_t ob_run(const ob_call* call) {
  const Dims d = dims_of(call);
  const int64_t T = d.B * d.S, W = d.DN + d.DR, half = d.DR / 2, C = d.RKV + d.DR;
  const float* X = static_cast<const float*>(call->inputs[0].data);
  const float* Wqd = static_cast<const float*>(call->inputs[1].data);
  const float* Wqu = static_cast<const float*>(call->inputs[2].data);
  const float* Wkvd = static_cast<const float*>(call->inputs[3].data);
  const float* Wku = static_cast<const float*>(call->inputs[4].data);
  const float* Wvu = static_cast<const float*>(call->inputs[5].data);
  const float* Wo = static_cast<const float*>(call->inputs[6].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* cq = static_cast<double*>(call->workspace);
  double* q = cq + T * d.RQ;
  double* c = q + T * d.H * W;
  double* kn = c + T * C;
  double* v = kn + T * d.H * d.DN;
  double* o = v + T * d.H * d.DV;
  double* y = o + T * d.H * d.DV;
  double* p = y + T * d.E;
  double* cosines = p + d.S;          // (S, half)
  double* sines = cosines + d.S * half;  // (S, half)

  matmul(X, d.E, Wqd, d.RQ, T, d.E, d.RQ, cq, d.RQ);                // query latent
  matmul(cq, d.RQ, Wqu, d.H * W, T, d.RQ, d.H * W, q, d.H * W);     // q = [q_nope ‖ q_rope] per head
  matmul(X, d.E, Wkvd, C, T, d.E, C, c, C);                         // [latent ‖ kr]
  matmul(c, C, Wku, d.H * d.DN, T, d.RKV, d.H * d.DN, kn, d.H * d.DN);
  matmul(c, C, Wvu, d.H * d.DV, T, d.RKV, d.H * d.DV, v, d.H * d.DV);

  for (int64_t s = 0; s < d.S; ++s)
    for (int64_t j = 0; j < half; ++j) {
      const double theta = std::pow(10000.0, -2.0 * double(j) / double(d.DR));
      cosines[s * half + j] = std::cos(double(s) * theta);
      sines[s * half + j] = std::sin(double(s) * theta);
    }
  for (int64_t t = 0; t < T; ++t) {
    const int64_t s = t % d.S;
    for (int64_t h = 0; h < d.H; ++h) rope(q + t * d.H * W + h * W + d.DN, cosines + s * half, sines + s * half, half);
    rope(c + t * C + d.RKV, cosines + s * half, sines + s * half, half);
  }

  const double scale = 1.0 / std::sqrt(double(W));
  const double masked = -1e9;
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t i = 0; i < d.S; ++i) {
        const double* qi = q + (b * d.S + i) * d.H * W + h * W;
        for (int64_t j = 0; j < d.S; ++j) {
          const double* kj = kn + (b * d.S + j) * d.H * d.DN + h * d.DN;  // k_nope of head h
          const double* rj = c + (b * d.S + j) * C + d.RKV;              // shared rope key
          double dot = 0.0;
          for (int64_t e = 0; e < d.DN; ++e) dot += qi[e] * kj[e];
          for (int64_t e = 0; e < d.DR; ++e) dot += qi[d.DN + e] * rj[e];
          p[j] = (j > i) ? masked : dot * scale;
        }
        double m = p[0];
        for (int64_t j = 1; j < d.S; ++j) m = std::fmax(m, p[j]);
        double sum = 0.0;
        for (int64_t j = 0; j < d.S; ++j) {
          p[j] = std::exp(p[j] - m);
          sum += p[j];
        }
        for (int64_t e = 0; e < d.DV; ++e) {
          double acc = 0.0;
          for (int64_t j = 0; j < d.S; ++j) acc += p[j] * v[(b * d.S + j) * d.H * d.DV + h * d.DV + e];
          o[(b * d.S + i) * d.H * d.DV + h * d.DV + e] = acc / sum;
        }
      }

  matmul(o, d.H * d.DV, Wo, d.E, T, d.H * d.DV, d.E, y, d.E);
  for (int64_t i = 0; i < T * d.E; ++i) Out[i] = float(y[i]);
  return 0;
}
