// Calls abort() (SIGABRT) before writing anything: the harness must report a crash (signal 6) and survive it.
#include <opbench/kernel.h>

#include <cstdlib>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  (void)call;
  std::abort();
}
