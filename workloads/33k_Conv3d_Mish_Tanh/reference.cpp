// 33k_Conv3d_Mish_Tanh reference: c = conv3d(x, W) + b (VALID, stride 1, NCDHW / OIDHW), then
// out = tanh(c · tanh(log(1 + exp(c)))), in double.
#include <opbench/kernel.h>
#include <cmath>
#include <cstdint>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], Cin = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4];
  const int64_t Cout = w.shape[0], K = w.shape[2];
  const int64_t OD = D - K + 1, OH = H - K + 1, OW = W - K + 1;
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* b = static_cast<const float*>(call->inputs[2].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Cout; ++o)
      for (int64_t z = 0; z < OD; ++z)
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t xo = 0; xo < OW; ++xo) {
            double c = double(b[o]);
            for (int64_t ci = 0; ci < Cin; ++ci)
              for (int64_t dz = 0; dz < K; ++dz)
                for (int64_t dy = 0; dy < K; ++dy)
                  for (int64_t dx = 0; dx < K; ++dx)
                    c += double(X[(((n * Cin + ci) * D + z + dz) * H + y + dy) * W + xo + dx]) *
                         double(Wt[(((o * Cin + ci) * K + dz) * K + dy) * K + dx]);
            const double m = c * std::tanh(std::log(1.0 + std::exp(c)));  // mish, naive softplus as written
            Out[(((n * Cout + o) * OD + z) * OH + y) * OW + xo] = float(std::tanh(m));
          }
  return 0;
}
