// The suite: every workload folder under the workloads root, and name matching for the CLI.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "workload/spec.h"

namespace opbench {

// A workload folder whose spec could not be loaded: it is listed and reported, never evaluated,
// and it does not stop the others from loading.
struct BrokenWorkload {
  std::string id;  // the folder name
  std::filesystem::path dir;
  std::string reason;  // the spec error, with file and line
};

class Registry {
 public:
  // Loads every folder of `root` that has a workload.toml, ordered by id number (1p … 50k). Each
  // spec loads on its own: a malformed one becomes a BrokenWorkload instead of failing the suite.
  explicit Registry(std::filesystem::path root);

  // The root used when none is given: $OPBENCH_WORKLOADS, else the source tree opbench was built from.
  static std::filesystem::path default_root();

  const std::vector<WorkloadSpec>& all() const { return workloads_; }
  const std::vector<BrokenWorkload>& broken() const { return broken_; }
  const std::filesystem::path& root() const { return root_; }

  // One workload by id, case-insensitive, or by a unique prefix ("8p" means 8p_GEMM). Throws
  // UsageError saying what matched, or what exists, otherwise; a broken workload's error names its
  // spec problem.
  const WorkloadSpec& find(const std::string& name) const;

  // Workloads matching a comma-separated list of ids, prefixes or shell globs ("*Attention*").
  // An empty pattern or "all" selects every workload. A pattern that names only broken workloads
  // selects nothing here; select_broken() gives those.
  std::vector<const WorkloadSpec*> select(const std::string& patterns) const;
  std::vector<const BrokenWorkload*> select_broken(const std::string& patterns) const;

 private:
  std::filesystem::path root_;
  std::vector<WorkloadSpec> workloads_;
  std::vector<BrokenWorkload> broken_;
};

}  // namespace opbench
