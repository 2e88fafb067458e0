// The leaderboard's metrics: searches (different agents or settings) compared on the workloads they
// all ran. Per run: candidates, correctness rate, fast_1 (share of workloads with a correct kernel
// faster than the baseline), geomean of the best speedups (1.0 where a run found none), share of the
// expert recovered, machine and agent time, tokens. A run in which some workload's search never got
// a successful agent call did not compete: it is listed, marked so, and not ranked.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/beam_search.h"

namespace opbench {

inline constexpr const char* kLeaderboardSchema = "opbench.leaderboard";

struct SearchRun {
  std::string label, dir;
  std::string isa;  // the instruction-set level it searched at (runs from before levels: x86-64-v3)
  std::map<std::string, SearchSummary> by_workload;
};

// Reads DIR/run.json (written by opbench search). Throws UsageError when it is missing or not a
// search run of a version this program reads.
SearchRun load_search_run(const std::filesystem::path& dir);

struct LeaderboardRow {
  std::string label, dir;
  size_t candidates = 0;
  double correctness_rate = 0, fast_1 = 0, geomean_speedup = 1;
  std::optional<double> share_of_expert;  // none when no workload has an expert figure
  double machine_s = 0, agent_s = 0;
  int64_t tokens = 0;
  size_t failures = 0;
  bool competed = true;     // false: some workload's search had no successful agent call
  std::string not_ranked_because;
  int rank = 0;             // 1 = best geomean speedup among the runs that competed; 0: not ranked
};

struct Leaderboard {
  std::string isa;                     // the level all runs searched at
  std::vector<std::string> workloads;  // those every run has
  std::vector<LeaderboardRow> rows;    // in the order the runs were given
  nlohmann::json to_json() const;      // stamped opbench.leaderboard
};

// Throws UsageError when the runs share no workload, or searched at different instruction-set
// levels (speedups over baselines at two levels are never ranked together).
Leaderboard compute_leaderboard(const std::vector<SearchRun>& runs);

}  // namespace opbench
