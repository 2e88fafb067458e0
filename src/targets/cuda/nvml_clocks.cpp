#include "targets/cuda/nvml_clocks.h"

#include <dlfcn.h>

namespace opbench::cuda {
namespace {

// nvml.h's C ABI (the header is not part of the toolkit here): results are ints (0 = success),
// devices opaque pointers, clock type 1 = SM.
using NvmlInit = int (*)();
using NvmlByPciBusId = int (*)(const char*, void**);
using NvmlClock = int (*)(void*, int, unsigned*);
using NvmlReasons = int (*)(void*, unsigned long long*);
constexpr int kSmClock = 1;
constexpr unsigned long long kIdle = 0x1;

struct Nvml {
  NvmlInit init = nullptr;
  NvmlByPciBusId by_pci = nullptr;
  NvmlClock clock = nullptr, max_clock = nullptr;
  NvmlReasons reasons = nullptr;
  bool loaded = false;
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return n;
    n.init = reinterpret_cast<NvmlInit>(dlsym(lib, "nvmlInit_v2"));
    n.by_pci = reinterpret_cast<NvmlByPciBusId>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.clock = reinterpret_cast<NvmlClock>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.max_clock = reinterpret_cast<NvmlClock>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    n.reasons = reinterpret_cast<NvmlReasons>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!n.reasons) n.reasons = reinterpret_cast<NvmlReasons>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    n.loaded = n.init && n.by_pci && n.clock && n.max_clock && n.init() == 0;
    return n;
  }();
  return n;
}

}  // namespace

NvmlClocks::NvmlClocks(const std::string& pci_bus_id) {
  const Nvml& n = nvml();
  if (!n.loaded) {
    why_not_ = "NVML (libnvidia-ml.so.1) not available";
    return;
  }
  if (n.by_pci(pci_bus_id.c_str(), &device_) != 0) {
    device_ = nullptr;
    why_not_ = "NVML does not know the device at " + pci_bus_id;
  }
}

unsigned NvmlClocks::sm_clock_mhz() const {
  unsigned mhz = 0;
  if (device_ && nvml().clock(device_, kSmClock, &mhz) != 0) mhz = 0;
  return mhz;
}

unsigned NvmlClocks::sm_clock_max_mhz() const {
  unsigned mhz = 0;
  if (device_ && nvml().max_clock(device_, kSmClock, &mhz) != 0) mhz = 0;
  return mhz;
}

uint64_t NvmlClocks::throttle_reasons() const {
  unsigned long long r = 0;
  if (!device_ || !nvml().reasons || nvml().reasons(device_, &r) != 0) return 0;
  return r & ~kIdle;
}

}  // namespace opbench::cuda
