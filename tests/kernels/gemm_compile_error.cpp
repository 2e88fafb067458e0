// Does not compile (assigns an ob_tensor to a float*): the harness must report a compile error.
#include <opbench/kernel.h>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  float* C = call->outputs[0];  // error: cannot convert 'const ob_tensor' to 'float*'
  C[0] = 0.0f;
  return 0;
}
