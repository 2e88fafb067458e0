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

// evaluation -> whether its outputs were right: "correct" for correct and untrusted (every output
// checked was right; an integrity verdict on the timing called it untrusted), else the status. What a
// sharded run must reproduce of a local one: its timing verdicts depend on the load beside it.
inline std::map<std::string, std::string> output_verdicts(const std::filesystem::path& run_dir) {
  std::map<std::string, std::string> out = statuses(run_dir);
  for (auto& [evaluation, status] : out)
    if (status == "untrusted") status = "correct";
  return out;
}

// One line per result, "evaluation status: message", for failure messages.
inline std::string results_summary(const std::filesystem::path& run_dir) {
  std::string out = run_dir.string() + ":\n";
  const nlohmann::json doc = read_json(run_dir / "results.json");
  for (const auto& r : doc["results"])
    out += "  " + evaluation_of(r) + " " + r["status"].get<std::string>() + ": " + r.value("message", std::string()) + "\n";
  return out;
}

}  // namespace opbench::testing
