// Never returns (spins on a volatile counter the compiler cannot remove): the harness must report a timeout and kill it.
#include <opbench/kernel.h>

#include <cstdint>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  (void)call;
  volatile uint64_t counter = 0;
  for (;;) counter = counter + 1;
}
