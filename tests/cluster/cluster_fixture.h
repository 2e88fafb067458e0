// Helpers of the cluster tests: the CLI runner of the end-to-end tests and what a run folder holds.
#pragma once

#include <map>
#include <string>

#include "../e2e/cli_runner.h"

namespace opbench::testing {

inline std::string evaluation_of(const nlohmann::json& result) {
  return result["workload"].get<std::string>() + "." + result["impl"]["kind"].get<std::string>();
}

// evaluation -> status, from a run folder's results.json.
inline std::map<std::string, std::string> statuses(const std::filesystem::path& run_dir) {
  std::map<std::string, std::string> out;
  const nlohmann::json doc = read_json(run_dir / "results.json");  // kept: a temporary would die before the loop
  for (const auto& r : doc["results"]) out[evaluation_of(r)] = r["status"];
  return out;
}

}  // namespace opbench::testing
