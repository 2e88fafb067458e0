// Scripted translation 2: does not compile (the search must send it back with the compiler's errors).
#include <opbench/kernel.h>
OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  return undeclared_variable;
}
