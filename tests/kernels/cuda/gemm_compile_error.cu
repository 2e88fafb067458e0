// 8p_GEMM (cuda): does not compile (compile_error, with nvcc's message in the build log).
#include <opbench/cuda_util.cuh>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  int32_t* wrong = call->inputs[0].data;  // void* to int32_t*: an error in C++
  return wrong[0];
}
