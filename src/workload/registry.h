// The suite: every workload folder under the workloads root, and name matching for the CLI.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "workload/spec.h"

namespace opbench {

class Registry {
 public:
  // Loads every folder of `root` that has a workload.toml, ordered by id number (1p … 50k).
  explicit Registry(std::filesystem::path root);

  // The root used when none is given: $OPBENCH_WORKLOADS, else the source tree opbench was built from.
  static std::filesystem::path default_root();

  const std::vector<WorkloadSpec>& all() const { return workloads_; }
  const std::filesystem::path& root() const { return root_; }

  // One workload by id, case-insensitive, or by a unique prefix ("8p" means 8p_GEMM). Throws
  // UsageError saying what matched, or what exists, otherwise.
  const WorkloadSpec& find(const std::string& name) const;

  // Workloads matching a comma-separated list of ids, prefixes or shell globs ("*Attention*").
  // An empty pattern or "all" selects every workload.
  std::vector<const WorkloadSpec*> select(const std::string& patterns) const;

 private:
  std::filesystem::path root_;
  std::vector<WorkloadSpec> workloads_;
};

}  // namespace opbench
