// The cuda target's ceilings, measured through the harness's own path: three trusted kernels under
// tools/cuda-peaks/ (a cuBLAS bf16 GEMM 8192^3, an fp32 FMA loop over the whole grid, a 2 GiB
// device-to-device copy), built with nvcc, run in the cuda worker and timed by its CUDA events.
#pragma once

#include <functional>
#include <string>

#include "targets/registry.h"

namespace opbench::cuda {

DevicePeaks measure_device_peaks(bool quick, const std::function<void(const std::string&)>& progress);

}  // namespace opbench::cuda
