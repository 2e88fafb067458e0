// Starts a helper process (fork): the symbol check must reject it before it runs.
#include <opbench/kernel.h>
#include <unistd.h>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  (void)call;
  if (fork() == 0) _exit(0);
  return 0;
}
