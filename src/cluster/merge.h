// `opbench merge`: the results of several run folders (the shards of one run, or runs of disjoint
// workloads) combined into one run folder that reads like a single run's: one result file per
// evaluation and a results.json with the scoreboard of all of them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/result.h"

namespace opbench {

struct MergeOptions {
  bool allow_mixed = false;    // merge runs of different targets, sizes, ISA levels or machines
  bool allow_partial = false;  // merge the shards there are when some of a sharded run are missing
};

struct MergeOutcome {
  nlohmann::json document;            // the merged results.json
  std::vector<Result> results;        // in suite order (workload number, then implementation)
  std::vector<std::string> warnings;  // evaluations a shard planned but has no result for, mixing allowed
};

// Reads DIR/results.json of every folder (schema opbench.run), checks that they belong together and
// writes the merged run into `out` (which must not be one of them). Throws UsageError saying what
// does not fit: a folder without results.json (a shard that did not finish), runs that differ in
// target, size, ISA level or machine (unless allow_mixed), the same evaluation in two folders, the
// same shard twice, shards of different partitions, or missing shards (unless allow_partial).
MergeOutcome merge_runs(const std::vector<std::filesystem::path>& dirs, const std::filesystem::path& out, const MergeOptions& options);

}  // namespace opbench
