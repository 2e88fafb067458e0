// 18k_Conv2D_ReLU_BiasAdd reference: out = relu(conv(x, W) + conv_bias) + bias, VALID
// cross-correlation with stride 1, NCHW / OIHW, in double.
#include <opbench/kernel.h>
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
  const float* conv_bias = static_cast<const float*>(call->inputs[2].data);
  const float* bias = static_cast<const float*>(call->inputs[3].data);  // (Cout, 1, 1)
  float* Out = static_cast<float*>(call->outputs[0].data);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Cout; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xo = 0; xo < OW; ++xo) {
          double c = double(conv_bias[o]);
          for (int64_t ci = 0; ci < Cin; ++ci)
            for (int64_t dy = 0; dy < K; ++dy)
              for (int64_t dx = 0; dx < K; ++dx)
                c += double(X[((n * Cin + ci) * H + y + dy) * W + xo + dx]) *
                     double(Wt[((o * Cin + ci) * K + dy) * K + dx]);
          const double r = c > 0.0 ? c : 0.0;  // relu
          Out[((n * Cout + o) * OH + y) * OW + xo] = float(r + double(bias[o]));
        }
  return 0;
}
