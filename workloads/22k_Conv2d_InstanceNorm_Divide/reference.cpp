// 22k_Conv2d_InstanceNorm_Divide reference: c = conv(x, W) (VALID, stride 1, NCHW / OIHW), then per
// (sample, channel) plane out = ((c - mean) / sqrt(var + 1e-5) · in_weight + in_bias) / 2, in double.
#include <opbench/kernel.h>
#include <cmath>
#include <cstdint>

OB_DEFINE_ABI_VERSION()

// One conv output plane in double.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& out = call->outputs[0];
  return uint64_t(out.shape[2] * out.shape[3]) * sizeof(double);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  const int64_t N = x.shape[0], Cin = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Cout = w.shape[0], K = w.shape[2];
  const int64_t OH = H - K + 1, OW = W - K + 1;
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* in_weight = static_cast<const float*>(call->inputs[2].data);
  const float* in_bias = static_cast<const float*>(call->inputs[3].data);
  float* Out = static_cast<float*>(call->outputs[0].data);
  double* c = static_cast<double*>(call->workspace);
  const double eps = 1e-5, divide_by = 2.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Cout; ++o) {
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xo = 0; xo < OW; ++xo) {
          double acc = 0.0;  // the conv bias is left out: the mean subtraction cancels it exactly
          for (int64_t ci = 0; ci < Cin; ++ci)
            for (int64_t dy = 0; dy < K; ++dy)
              for (int64_t dx = 0; dx < K; ++dx)
                acc += double(X[((n * Cin + ci) * H + y + dy) * W + xo + dx]) *
                       double(Wt[((o * Cin + ci) * K + dy) * K + dx]);
          c[y * OW + xo] = acc;
        }
      double mean = 0.0;
      for (int64_t p = 0; p < OH * OW; ++p) mean += c[p];
      mean = mean / double(OH * OW);
      double var = 0.0;  // biased (population) variance
      for (int64_t p = 0; p < OH * OW; ++p) var += (c[p] - mean) * (c[p] - mean);
      var = var / double(OH * OW);
      const double inv_std = 1.0 / std::sqrt(var + eps);
      for (int64_t p = 0; p < OH * OW; ++p)
        Out[(n * Cout + o) * OH * OW + p] =
            float(((c[p] - mean) * inv_std * double(in_weight[o]) + double(in_bias[o])) / divide_by);
    }
  return 0;
}
