// Writes to address 0 through a volatile null pointer (SIGSEGV): the harness must report a crash (signal 11) and survive it.
#include <opbench/kernel.h>

#include <cstdint>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  (void)call;
  // The address comes from a volatile variable, so the compiler cannot prove it is null (and turn
  // the store into a trap instruction) nor drop the store.
  volatile uintptr_t address = 0;
  volatile float* p = reinterpret_cast<volatile float*>(uintptr_t(address));
  *p = 1.0f;
  return 0;
}
