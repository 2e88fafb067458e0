// opbench compare A B: the same workloads and implementations in two sets of results, side by side.
// A change counts as significant only when the two speedups' 95% intervals do not overlap: each
// interval comes from that run's own paired baseline/candidate ratios, so machine drift between the
// runs (which moves baseline and candidate together) does not make a change.
#pragma once

#include <string>
#include <vector>

#include "harness/result.h"
#include "report/report_data.h"

namespace opbench {

struct ResultDelta {
  std::string workload, impl;
  const Result* a = nullptr;  // null: only in B
  const Result* b = nullptr;  // null: only in A
  double speedup_ratio = 0;   // B's speedup / A's speedup (NaN when either is missing)
  double time_ratio = 0;      // B's median / A's median
  std::string verdict;        // "faster", "slower", "same" (intervals overlap), "status changed", "only in A", "only in B"
};

std::vector<ResultDelta> compare_results(const std::vector<Result>& a, const std::vector<Result>& b);
ReportTable compare_table(const std::vector<ResultDelta>& deltas, const std::string& label_a, const std::string& label_b);

}  // namespace opbench
