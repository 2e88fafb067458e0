// 34k_Conv2d_Activation_BatchNorm reference: c = conv(x, W) + b (VALID, stride 1, NCHW / OIHW),
// m = tanh(softplus(c)) · c (Mish), then training-mode BatchNorm per channel over (N, OH, OW) with the
// affine, in double.
#include <opbench/kernel.h>
#include <cmath>
#include <cstdint>

OB_DEFINE_ABI_VERSION()

// The whole activated conv output (N, Cout, OH, OW) in double: the batch statistics need all of it.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(ob_numel(&call->outputs[0])) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], Cin = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Cout = w.shape[0], K = w.shape[2];
  const int64_t OH = H - K + 1, OW = W - K + 1, P = OH * OW;
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* b = static_cast<const float*>(call->inputs[2].data);
  const float* bn_weight = static_cast<const float*>(call->inputs[3].data);
  const float* bn_bias = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* m = static_cast<double*>(call->workspace);
  const double eps = 1e-5;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Cout; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xo = 0; xo < OW; ++xo) {
          double c = double(b[o]);
          for (int64_t ci = 0; ci < Cin; ++ci)
            for (int64_t dy = 0; dy < K; ++dy)
              for (int64_t dx = 0; dx < K; ++dx)
                c += double(X[((n * Cin + ci) * H + y + dy) * W + xo + dx]) *
                     double(Wt[((o * Cin + ci) * K + dy) * K + dx]);
          // Mish: tanh(softplus(c)) · c; log(1 + e^c) is exact in double for |c| < 700.
          m[(n * Cout + o) * P + y * OW + xo] = std::tanh(std::log(1.0 + std::exp(c))) * c;
        }
  for (int64_t o = 0; o < Cout; ++o) {  // batch statistics of channel o over (N, OH, OW)
    double mean = 0.0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t p = 0; p < P; ++p) mean += m[(n * Cout + o) * P + p];
    mean = mean / double(N * P);
    double var = 0.0;  // biased (population) variance
    for (int64_t n = 0; n < N; ++n)
      for (int64_t p = 0; p < P; ++p) {
        const double d = m[(n * Cout + o) * P + p] - mean;
        var += d * d;
      }
    var = var / double(N * P);
    const double inv_std = 1.0 / std::sqrt(var + eps);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t p = 0; p < P; ++p)
        Out[(n * Cout + o) * P + p] =
            float((m[(n * Cout + o) * P + p] - mean) * inv_std * double(bn_weight[o]) + double(bn_bias[o]));
  }
  return 0;
}
