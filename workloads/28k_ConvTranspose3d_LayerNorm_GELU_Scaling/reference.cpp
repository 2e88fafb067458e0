// 28k_ConvTranspose3d_LayerNorm_GELU_Scaling reference: y = conv_transpose3d(x, Wt) with kernel 4,
// stride 2, padding 1 (PyTorch semantics, Wt stored (Cin, Cout, kd, kh, kw)), written as the scatter
// of every input sample through every tap; then LayerNorm over the last (width) axis with
// width-indexed ln_weight / ln_bias, GELU (tanh form) and the scaling by 1.0, in double.
#include <opbench/kernel.h>
#include <cmath>
#include <cstdint>

OB_DEFINE_ABI_VERSION()

constexpr int64_t kStride = 2, kPad = 1;

// One sample's transposed-conv output (Cout, OD, OH, OW) in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& out = call->outputs[0];
  return uint64_t(out.shape[1] * out.shape[2] * out.shape[3] * out.shape[4]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const ob_tensor& out = call->outputs[0];
  const int64_t N = x.shape[0], Cin = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4];
  const int64_t Cout = w.shape[1], K = w.shape[2];
  const int64_t OD = out.shape[2], OH = out.shape[3], OW = out.shape[4];  // 2D, 2H, 2W
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* ln_weight = static_cast<const float*>(call->inputs[2].data);  // (OW,): by width position
  const float* ln_bias = static_cast<const float*>(call->inputs[3].data);
  float* Out = static_cast<float*>(out.data);
  double* y = static_cast<double*>(call->workspace);
  const double eps = 1e-5, scaling_factor = 1.0, c = 0.7978845608028654;  // c = √(2/π)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = 0; i < Cout * OD * OH * OW; ++i) y[i] = 0.0;
    for (int64_t ci = 0; ci < Cin; ++ci)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t wi = 0; wi < W; ++wi) {
            const double xv = double(X[(((n * Cin + ci) * D + d) * H + h) * W + wi]);
            for (int64_t o = 0; o < Cout; ++o)
              for (int64_t kd = 0; kd < K; ++kd) {
                const int64_t z = kStride * d - kPad + kd;
                if (z < 0 || z >= OD) continue;
                for (int64_t kh = 0; kh < K; ++kh) {
                  const int64_t r = kStride * h - kPad + kh;
                  if (r < 0 || r >= OH) continue;
                  for (int64_t kw = 0; kw < K; ++kw) {
                    const int64_t q = kStride * wi - kPad + kw;
                    if (q < 0 || q >= OW) continue;
                    y[((o * OD + z) * OH + r) * OW + q] += xv * double(Wt[(((ci * Cout + o) * K + kd) * K + kh) * K + kw]);
                  }
                }
              }
          }
    for (int64_t row = 0; row < Cout * OD * OH; ++row) {  // LayerNorm over the width axis
      const double* v = y + row * OW;
      double mean = 0.0;
      for (int64_t q = 0; q < OW; ++q) mean += v[q];
      mean = mean / double(OW);
      double var = 0.0;  // biased (population) variance
      for (int64_t q = 0; q < OW; ++q) var += (v[q] - mean) * (v[q] - mean);
      var = var / double(OW);
      const double inv_std = 1.0 / std::sqrt(var + eps);
      for (int64_t q = 0; q < OW; ++q) {
        const double t = (v[q] - mean) * inv_std * double(ln_weight[q]) + double(ln_bias[q]);
        const double g = 0.5 * t * (1.0 + std::tanh(c * (t + 0.044715 * t * t * t)));  // gelu, tanh form
        Out[(n * Cout * OD * OH + row) * OW + q] = float(g * scaling_factor);
      }
    }
  }
  return 0;
}
