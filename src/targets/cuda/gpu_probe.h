// Whether this machine has an NVIDIA GPU the cuda target can use, asked of the driver itself
// (libcuda.so.1, loaded at run time): opbench links no CUDA library, so it runs unchanged on machines
// without the driver, where the answer is the reason the cuda target cannot run.
#pragma once

#include <string>

namespace opbench::cuda {

struct GpuProbe {
  int devices = 0;
  std::string name;          // of device 0
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::string driver;        // the driver's CUDA version, e.g. "13.0"
  std::string why_not;       // empty when a device is usable
};

// Probed once per process. $OPBENCH_NO_GPU=1 pretends there is none (tests of the no-GPU path on a
// machine that has one).
const GpuProbe& gpu_probe();

}  // namespace opbench::cuda
