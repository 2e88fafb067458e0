// The scoreboard: results aggregated into one table with geomean speedups and correctness counts.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/result.h"

namespace opbench {

struct ScoreboardSummary {
  size_t results = 0, correct = 0;
  double geomean_correct_only = 0;    // over correct results
  double geomean_failures_as_one = 0; // failures count as speedup 1.0
  std::vector<double> fast_p_thresholds{0, 0.5, 0.8, 1, 1.5, 2};
  std::vector<double> fast_p;          // share correct with speedup > p
};

ScoreboardSummary summarize_results(const std::vector<Result>& results);
std::string render_scoreboard(const std::vector<Result>& results);
nlohmann::json scoreboard_json(const std::vector<Result>& results);

}  // namespace opbench
