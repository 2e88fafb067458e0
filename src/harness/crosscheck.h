// The cross-target check: an implementation on one target (a cuda baseline, say) against the
// workload's fp32 reference on the cpu target, on the same inputs. The baseline is the oracle of
// every evaluation on its target, so this is what makes it trustworthy: inputs are generated in the
// target's float type (bf16 on cuda), widened exactly to fp32 for the reference, and the target's
// outputs widened to fp32 are compared with the reference's under the target dtype's tolerance.
#pragma once

#include <string>
#include <vector>

#include "core/compare.h"
#include "harness/evaluate.h"
#include "targets/target.h"

namespace opbench {

struct CrossCheckTrial {
  uint64_t seed = 0;
  Comparison comparison;       // all outputs merged
  std::string reason;          // empty when it passed
};

struct CrossCheckResult {
  std::string workload, impl, target, size;
  bool passed = false;
  std::string message;         // why not, in one line (build, load, run or compare)
  Tolerance tolerance;
  std::vector<CrossCheckTrial> trials;
  double target_seconds = 0;   // wall time of the target's calls, including its start
};

// Runs `impl` on `target` and the reference on `reference_target` for `trials` fresh seeds. A build,
// load or run failure is a failed check with its reason, never an exception (UsageError aside).
CrossCheckResult cross_check(const WorkloadSpec& spec, const Implementation& impl, Target& target, Target& reference_target,
                             const std::string& size, int trials, uint64_t first_seed);

}  // namespace opbench
