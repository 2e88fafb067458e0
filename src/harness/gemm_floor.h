// The GEMM floor of a baseline: its time against the bare vendor-library GEMMs it performs, at the
// same shapes, measured side by side with the paired protocol. A GEMM-dominated baseline should be
// within 1.25x of that floor: anything more is overhead a compiler would not add.
#pragma once

#include <string>

#include "harness/timing.h"
#include "targets/target.h"
#include "workload/spec.h"

namespace opbench {

struct GemmFloor {
  std::string workload, size;
  size_t gemm_count = 0;
  double gemm_flops = 0, workload_flops = 0;
  double baseline_ms = 0, bare_ms = 0;
  double ratio = 0, ci95_low = 0, ci95_high = 0;  // baseline time / bare GEMM time
  size_t pairs = 0;
};

// The source of a kernel that performs only `gemms` with cblas_sgemm on workspace buffers.
std::string bare_gemm_source(const std::vector<ResolvedGemm>& gemms);

// Throws UsageError when the workload declares no GEMMs.
GemmFloor measure_gemm_floor(const WorkloadSpec& spec, const std::string& size, Target& target, int threads,
                             const TimingOptions& timing);

}  // namespace opbench
