// 25k_Conv3d_GroupNorm_Mean reference: c = conv3d(x, W) + conv_bias (VALID, stride 1, NCDHW / OIDHW),
// GroupNorm with 8 groups and its affine, then the mean over (C, D, H, W) per sample, in double.
#include <opbench/kernel.h>
#include <cmath>
#include <cstdint>

OB_DEFINE_ABI_VERSION()

constexpr int64_t kGroups = 8;

// One sample's conv output (Cout, OD, OH, OW) in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t K = w.shape[2];
  return uint64_t(w.shape[0] * (x.shape[2] - K + 1) * (x.shape[3] - K + 1) * (x.shape[4] - K + 1)) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], Cin = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4];
  const int64_t Cout = w.shape[0], K = w.shape[2];
  const int64_t OD = D - K + 1, OH = H - K + 1, OW = W - K + 1, P = OD * OH * OW;
  const int64_t Cg = Cout / kGroups;  // channels per group
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* conv_bias = static_cast<const float*>(call->inputs[2].data);
  const float* gamma = static_cast<const float*>(call->inputs[3].data);
  const float* beta = static_cast<const float*>(call->inputs[4].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* c = static_cast<double*>(call->workspace);
  const double eps = 1e-5;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < Cout; ++o)
      for (int64_t z = 0; z < OD; ++z)
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t xo = 0; xo < OW; ++xo) {
            double acc = double(conv_bias[o]);
            for (int64_t ci = 0; ci < Cin; ++ci)
              for (int64_t dz = 0; dz < K; ++dz)
                for (int64_t dy = 0; dy < K; ++dy)
                  for (int64_t dx = 0; dx < K; ++dx)
                    acc += double(X[(((n * Cin + ci) * D + z + dz) * H + y + dy) * W + xo + dx]) *
                           double(Wt[(((o * Cin + ci) * K + dz) * K + dy) * K + dx]);
            c[((o * OD + z) * OH + y) * OW + xo] = acc;
          }
    double total = 0.0;
    for (int64_t g = 0; g < kGroups; ++g) {
      const double* cg = c + g * Cg * P;  // the group's channels are contiguous
      double mean = 0.0;
      for (int64_t i = 0; i < Cg * P; ++i) mean += cg[i];
      mean = mean / double(Cg * P);
      double var = 0.0;  // biased (population) variance
      for (int64_t i = 0; i < Cg * P; ++i) var += (cg[i] - mean) * (cg[i] - mean);
      var = var / double(Cg * P);
      const double inv_std = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < Cg * P; ++i) {
        const int64_t o = g * Cg + i / P;
        total += (cg[i] - mean) * inv_std * double(gamma[o]) + double(beta[o]);
      }
    }
    Out[n] = float(total / double(Cout * P));
  }
  return 0;
}
