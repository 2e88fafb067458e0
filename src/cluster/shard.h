// `--shard I/N`: a deterministic partition of a run's evaluations (workloads x implementations)
// into N shards, so N machines (Slurm array tasks) can each run one and `opbench merge` can put the
// pieces back together. Shards are numbered from 0, like Slurm array task ids.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace opbench {

struct Shard {
  int index = 0;
  int count = 1;  // 1: the whole run, unsharded

  bool whole() const { return count == 1; }
  // Evaluation number `position` of the canonically ordered list belongs to this shard. Round robin:
  // neighbours in the list (often the same workload's implementations, or workloads of one family
  // with similar cost) land on different shards, which spreads the work evenly.
  bool contains(size_t position) const { return position % size_t(count) == size_t(index); }
  std::string to_string() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// Parses "I/N" with 0 <= I < N; throws UsageError naming `option` otherwise.
Shard parse_shard(const std::string& text, const std::string& option = "--shard");

// The name of one evaluation in a run, as in its result file: "<workload>.<impl>".
inline std::string evaluation_name(const std::string& workload, const std::string& impl) { return workload + "." + impl; }

}  // namespace opbench
