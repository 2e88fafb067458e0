// The workload lint: checks that a workload's data and spec can tell right kernels from wrong
// ones, at the test size, by running its reference.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "targets/target.h"
#include "workload/spec.h"

namespace opbench {

struct LintFinding {
  std::string check;  // e.g. "every_input_matters"
  bool failed = false;
  std::string detail;
};

struct LintReport {
  std::string workload;
  std::vector<LintFinding> findings;
  double formula_flops = 0, counted_operations = 0;
  bool passed() const;
};

// Checks, each a finding:
//   varies_across_elements  no output is constant (or nearly: std/rms < 1e-3) across its elements
//   varies_across_seeds     every output changes when all inputs are drawn from another seed
//   every_input_matters     redrawing any one input (or one joint metadata group) moves some output
//                           beyond the f32 tolerance
//   zero_output_fails       an all-zero output fails every declared tolerance
//   constant_output_fails   an output equal to the expected mean everywhere fails every tolerance
//   flop_formula            the spec's FLOPs are within 2x of the reference's counted operations
LintReport lint_workload(const WorkloadSpec& spec, Target& target);

nlohmann::json to_json(const LintReport& report);

}  // namespace opbench
