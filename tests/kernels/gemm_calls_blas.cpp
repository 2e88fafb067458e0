// Calls cblas_sgemm directly, hoping the library is already in the process: the symbol check must
// reject the import (a vendor BLAS) before the kernel runs.
#include <opbench/kernel.h>

OB_DEFINE_ABI_VERSION()

extern "C" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

extern "C" int32_t ob_run(const ob_call* call) {
  const int M = int(call->inputs[0].shape[0]), K = int(call->inputs[0].shape[1]), N = int(call->inputs[1].shape[1]);
  cblas_sgemm(101, 111, 111, M, N, K, 1.0f, static_cast<const float*>(call->inputs[0].data), K,
              static_cast<const float*>(call->inputs[1].data), N, 0.0f, static_cast<float*>(call->outputs[0].data), N);
  return 0;
}
