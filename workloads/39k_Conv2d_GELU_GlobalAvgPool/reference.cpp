// 39k_Conv2d_GELU_GlobalAvgPool reference: c = conv(x, W) + b (VALID, stride 1, NCHW / OIHW), then
// out[n, o] = mean over positions of gelu_tanh(c), in double.
#include <opbench/kernel.h>
#include <cmath>
#include <cstdint>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], Cin = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Cout = w.shape[0], K = w.shape[2];
  const int64_t OH = H - K + 1, OW = W - K + 1;
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* b = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  const double k = 0.7978845608028654;  // √(2/π)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Cout; ++o) {
      double sum = 0.0;
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xo = 0; xo < OW; ++xo) {
          double c = double(b[o]);
          for (int64_t ci = 0; ci < Cin; ++ci)
            for (int64_t dy = 0; dy < K; ++dy)
              for (int64_t dx = 0; dx < K; ++dx)
                c += double(X[((n * Cin + ci) * H + y + dy) * W + xo + dx]) *
                     double(Wt[((o * Cin + ci) * K + dy) * K + dx]);
          sum += 0.5 * c * (1.0 + std::tanh(k * (c + 0.044715 * c * c * c)));  // gelu, tanh form
        }
      Out[n * Cout + o] = float(sum / double(OH * OW));
    }
  return 0;
}
