// The GEMM floor of a baseline: its time against the bare vendor-library GEMMs it performs, at the
// same shapes, measured side by side with the paired protocol. Each library (OpenBLAS's cblas_sgemm,
// oneDNN's dnnl_sgemm) is measured against the baseline in the same run, at the same instruction-set
// level, and the floor is the faster of them. A GEMM-dominated baseline should be within 1.25x of that
// floor: anything more is overhead a compiler would not add.
#pragma once

#include <string>

#include "harness/timing.h"
#include "targets/target.h"
#include "workload/spec.h"

namespace opbench {

// The vendor GEMM entry points a bare kernel can call.
enum class GemmLibrary { openblas, onednn };
std::string gemm_library_name(GemmLibrary library);  // "openblas", "onednn"

// One library's bare GEMMs against the baseline.
struct BareGemmTiming {
  GemmLibrary library = GemmLibrary::openblas;
  double baseline_ms = 0, bare_ms = 0;
  double ratio = 0, ci95_low = 0, ci95_high = 0;  // baseline time / bare GEMM time
  size_t pairs = 0;
};

struct GemmFloor {
  std::string workload, size, isa;
  size_t gemm_count = 0;
  double gemm_flops = 0, workload_flops = 0;
  std::vector<BareGemmTiming> libraries;  // each library measured, in the order above
  // The floor: the library whose bare GEMMs were fastest, copied from `libraries`.
  GemmLibrary best = GemmLibrary::openblas;
  double baseline_ms = 0, bare_ms = 0;
  double ratio = 0, ci95_low = 0, ci95_high = 0;  // baseline time / bare GEMM time of the best library
  size_t pairs = 0;
};

// The source of a kernel that performs only `gemms` with `library`'s sgemm on workspace buffers.
std::string bare_gemm_source(const std::vector<ResolvedGemm>& gemms, GemmLibrary library = GemmLibrary::openblas);

// Throws UsageError when the workload declares no GEMMs. `isa`: the target's instruction-set level
// (empty: its default).
GemmFloor measure_gemm_floor(const WorkloadSpec& spec, const std::string& size, Target& target, int threads,
                             const TimingOptions& timing, const std::string& isa = {});

}  // namespace opbench
