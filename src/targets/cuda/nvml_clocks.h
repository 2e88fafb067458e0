// The GPU's SM clock and its throttle reasons, read through NVML (libnvidia-ml.so.1, part of the
// driver, loaded at run time) as nvbench reports them beside each measurement. Every reading is
// best effort: without NVML the values stay 0 and the result says the clocks were not read.
#pragma once

#include <cstdint>
#include <string>

namespace opbench::cuda {

class NvmlClocks {
 public:
  // `pci_bus_id` as cudaDeviceGetPCIBusId writes it ("0000:19:00.0").
  explicit NvmlClocks(const std::string& pci_bus_id);
  bool available() const { return device_ != nullptr; }
  unsigned sm_clock_mhz() const;       // now; 0 if unknown
  unsigned sm_clock_max_mhz() const;   // the device's maximum
  uint64_t throttle_reasons() const;   // NVML's clocks-event reason bits, idle excluded
  std::string why_not() const { return why_not_; }

 private:
  void* device_ = nullptr;
  std::string why_not_;
};

}  // namespace opbench::cuda
