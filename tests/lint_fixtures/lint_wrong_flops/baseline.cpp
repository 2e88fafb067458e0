// Lint fixture lint_wrong_flops: C = A·B, broken on purpose.
#include <opbench/kernel.h>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1], N = call->inputs[1].shape[1];
  const float* A = static_cast<const float*>(call->inputs[0].data);
  const float* B = static_cast<const float*>(call->inputs[1].data);
  float* C = static_cast<float*>(call->outputs[0].data);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += double(A[m * K + k]) * double(B[k * N + n]);
      C[m * N + n] = float(acc);
    }
  (void)A;
  (void)B;
  return 0;
}
