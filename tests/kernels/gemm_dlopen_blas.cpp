// Loads OpenBLAS at run time and calls its sgemm behind a "custom kernel": the symbol check must
// reject it (dlopen) before it runs.
#include <opbench/kernel.h>
#include <dlfcn.h>

OB_DEFINE_ABI_VERSION()

using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

extern "C" int32_t ob_run(const ob_call* call) {
  void* blas = dlopen("libopenblas.so.0", RTLD_NOW);
  if (!blas) return 1;
  auto sgemm = reinterpret_cast<Sgemm>(dlsym(blas, "cblas_sgemm"));
  const int M = int(call->inputs[0].shape[0]), K = int(call->inputs[0].shape[1]), N = int(call->inputs[1].shape[1]);
  sgemm(101, 111, 111, M, N, K, 1.0f, static_cast<const float*>(call->inputs[0].data), K,
        static_cast<const float*>(call->inputs[1].data), N, 0.0f, static_cast<float*>(call->outputs[0].data), N);
  return 0;
}
