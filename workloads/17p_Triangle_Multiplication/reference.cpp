// 17p_Triangle_Multiplication reference: AlphaFold2's outgoing triangle multiplicative update as
// tokamax writes it (no input LayerNorm, RMS-style centre norm), in double:
//   a = pair_act ⊙ mask;  Left = (a·W_lp) ⊙ σ(a·W_lg);  Right = (a·W_rp) ⊙ σ(a·W_rg)
//   T[i,j,c] = Σ_k Left[i,k,c]·Right[j,k,c];  U = T / sqrt(mean_c T² + 1e-6) ⊙ center_scale
//   out = (U·W_op) ⊙ σ(pair_act·W_og)
#include <opbench/kernel.h>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// Left and Right (N·N·C each), then rows of C: a, four projection accumulators, T, U, o, g.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t N = call->inputs[0].shape[0], C = call->inputs[0].shape[2];
  return uint64_t(2 * N * N * C + 9 * C) * sizeof(double);
}

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t N = call->inputs[0].shape[0], C = call->inputs[0].shape[2];
  const float* pair = static_cast<const float*>(call->inputs[0].data);  // (N, N, C)
  const float* mask = static_cast<const float*>(call->inputs[1].data);  // (N, N, 1)
  const float* W_lp = static_cast<const float*>(call->inputs[2].data);  // (C, C), stored (in, out)
  const float* W_rp = static_cast<const float*>(call->inputs[3].data);
  const float* W_lg = static_cast<const float*>(call->inputs[4].data);
  const float* W_rg = static_cast<const float*>(call->inputs[5].data);
  const float* center_scale = static_cast<const float*>(call->inputs[6].data);  // (C,)
  const float* W_op = static_cast<const float*>(call->inputs[7].data);
  const float* W_og = static_cast<const float*>(call->inputs[8].data);
  float* out = static_cast<float*>(call->outputs[0].data);  // (N, N, C)
  double* left = static_cast<double*>(call->workspace);
  double* right = left + N * N * C;
  double* a = right + N * N * C;
  double* lp = a + C;
  double* rp = lp + C;
  double* lg = rp + C;
  double* rg = lg + C;
  double* t = rg + C;
  double* u = t + C;
  double* o = u + C;
  double* g = o + C;

  // 1-2. Masked input, the four projections and the gated Left/Right, per position p = (i, k).
  for (int64_t p = 0; p < N * N; ++p) {
    for (int64_t c = 0; c < C; ++c) {
      a[c] = double(pair[p * C + c]) * double(mask[p]);
      lp[c] = rp[c] = lg[c] = rg[c] = 0.0;
    }
    for (int64_t ci = 0; ci < C; ++ci) {
      for (int64_t c = 0; c < C; ++c) {
        lp[c] += a[ci] * double(W_lp[ci * C + c]);
        rp[c] += a[ci] * double(W_rp[ci * C + c]);
        lg[c] += a[ci] * double(W_lg[ci * C + c]);
        rg[c] += a[ci] * double(W_rg[ci * C + c]);
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      left[p * C + c] = lp[c] * sigmoid(lg[c]);
      right[p * C + c] = rp[c] * sigmoid(rg[c]);
    }
  }

  // 3-5. Per output position (i, j): the triangle contraction over k, the RMS norm over channels,
  // the output projection and the gate from the unmasked input.
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t c = 0; c < C; ++c) t[c] = 0.0;
      for (int64_t k = 0; k < N; ++k) {
        for (int64_t c = 0; c < C; ++c) t[c] += left[(i * N + k) * C + c] * right[(j * N + k) * C + c];
      }
      double sum_sq = 0.0;
      for (int64_t c = 0; c < C; ++c) sum_sq += t[c] * t[c];
      const double rms = std::sqrt(sum_sq / double(C) + 1e-6);
      for (int64_t c = 0; c < C; ++c) u[c] = t[c] / rms * double(center_scale[c]);
      const float* x = pair + (i * N + j) * C;
      for (int64_t c = 0; c < C; ++c) o[c] = g[c] = 0.0;
      for (int64_t ci = 0; ci < C; ++ci) {
        for (int64_t c = 0; c < C; ++c) {
          o[c] += u[ci] * double(W_op[ci * C + c]);
          g[c] += double(x[ci]) * double(W_og[ci * C + c]);
        }
      }
      for (int64_t c = 0; c < C; ++c) out[(i * N + j) * C + c] = float(o[c] * sigmoid(g[c]));
    }
  }
  return 0;
}
