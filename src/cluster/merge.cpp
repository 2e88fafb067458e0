#include "cluster/merge.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster/run_identity.h"
#include "cluster/shard.h"
#include "core/error.h"
#include "core/json_io.h"
#include "report/scoreboard.h"

namespace opbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct Input {
  fs::path dir;
  json doc;
  RunIdentity identity;
};

Input read_input(const fs::path& dir) {
  const fs::path file = dir / "results.json";
  if (!fs::is_directory(dir)) throw UsageError(fmt::format("{} is not a folder", dir.string()));
  if (!fs::exists(file))
    throw UsageError(fmt::format("{} has no results.json: that run did not finish (a shard still running, failed or cancelled)", dir.string()));
  Input in;
  in.dir = dir;
  try {
    in.doc = read_json_document(file, "opbench.run");
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("cannot merge {}: {}", file.string(), e.what()));
  }
  if (!in.doc.value("complete", true))
    throw UsageError(fmt::format("{} is an unfinished run (its results.json says complete: false): a shard still running, failed or cancelled",
                                 dir.string()));
  in.identity = identity_of_run(in.doc);
  return in;
}

// Suite order: the workload's number (1p ... 50k), then its id, then the implementation.
bool suite_order(const Result& a, const Result& b) {
  auto number = [](const std::string& id) {
    size_t digits = 0;
    while (digits < id.size() && std::isdigit(static_cast<unsigned char>(id[digits]))) ++digits;
    return digits ? std::stol(id.substr(0, digits)) : 0L;
  };
  return std::tuple(number(a.workload), a.workload, a.impl.kind) < std::tuple(number(b.workload), b.workload, b.impl.kind);
}

// Several runs' value of one identity field, as one string: "test", or "test,cpu" when mixed.
std::string joined(const std::vector<Input>& inputs, std::string RunIdentity::*field) {
  std::vector<std::string> values;
  for (const auto& in : inputs)
    if (std::find(values.begin(), values.end(), in.identity.*field) == values.end()) values.push_back(in.identity.*field);
  return fmt::format("{}", fmt::join(values, ","));
}

// The shards among the inputs must be the shards of one partition, each once and, unless partial
// merges are allowed, all of them.
void check_shards(const std::vector<Input>& inputs, const MergeOptions& options, std::vector<std::string>* warnings) {
  std::map<int, fs::path> seen;
  int count = 0;
  for (const auto& in : inputs) {
    if (!in.doc.contains("shard")) continue;
    const json& s = in.doc["shard"];
    const int index = s.at("index"), n = s.at("count");
    if (count != 0 && n != count)
      throw UsageError(fmt::format("{} is shard {}/{} but other folders are shards of {}: not one partition", in.dir.string(), index, n, count));
    count = n;
    if (auto [it, fresh] = seen.emplace(index, in.dir); !fresh)
      throw UsageError(fmt::format("shard {}/{} is in both {} and {}", index, n, it->second.string(), in.dir.string()));
    std::set<std::string> present;
    for (const auto& r : in.doc.at("results")) present.insert(evaluation_name(r.value("workload", ""), r.value("impl", json::object()).value("kind", "")));
    for (const auto& planned : s.value("evaluations", json::array()))
      if (!present.count(planned.get<std::string>()))
        warnings->push_back(fmt::format("{} (shard {}/{}) has no result for {}: the harness failed on it", in.dir.string(), index, n, planned.get<std::string>()));
  }
  std::vector<int> missing;
  for (int i = 0; i < count; ++i)
    if (!seen.count(i)) missing.push_back(i);
  if (missing.empty()) return;
  const std::string what = fmt::format("shard(s) {} of {} missing", fmt::join(missing, ", "), count);
  if (!options.allow_partial) throw UsageError(what + " (--allow-partial merges the ones there are)");
  warnings->push_back(what);
}

}  // namespace

MergeOutcome merge_runs(const std::vector<fs::path>& dirs, const fs::path& out, const MergeOptions& options) {
  if (dirs.empty()) throw UsageError("nothing to merge: give the run folders");
  std::vector<Input> inputs;
  for (const auto& dir : dirs) {
    if (fs::exists(out) && fs::exists(dir) && fs::equivalent(dir, out))
      throw UsageError(fmt::format("--out {} is one of the folders to merge; write the merged run elsewhere", out.string()));
    inputs.push_back(read_input(dir));
  }
  MergeOutcome outcome;
  std::vector<std::string> mixed;
  for (size_t i = 1; i < inputs.size(); ++i)
    for (const auto& d : identity_differences(inputs[0].identity, inputs[i].identity))
      mixed.push_back(fmt::format("{} vs {}: {}", inputs[0].dir.string(), inputs[i].dir.string(), d));
  if (!mixed.empty() && !options.allow_mixed)
    throw UsageError(fmt::format("these runs are not comparable:\n  {}\n(--allow-mixed merges them anyway; the merged run records what differs)",
                                 fmt::join(mixed, "\n  ")));
  check_shards(inputs, options, &outcome.warnings);

  std::map<std::string, fs::path> where;  // evaluation -> folder it came from
  json sources = json::array();
  std::set<std::string> hosts;
  double seconds = 0;
  for (const auto& in : inputs) {
    size_t count = 0;
    for (const auto& r : in.doc.at("results")) {
      Result result = result_from_json(r);
      const std::string name = evaluation_name(result.workload, result.impl.kind);
      if (auto [it, fresh] = where.emplace(name, in.dir); !fresh)
        throw UsageError(fmt::format("{} is in both {} and {}; merge runs of disjoint evaluations", name, it->second.string(), in.dir.string()));
      outcome.results.push_back(std::move(result));
      ++count;
    }
    seconds += in.doc.value("seconds", 0.0);
    hosts.insert(in.identity.hostname);
    json source = {{"dir", fs::absolute(in.dir).lexically_normal().string()}, {"hostname", in.identity.hostname},
                   {"seconds", in.doc.value("seconds", 0.0)}, {"results", count}};
    if (in.doc.contains("shard")) source["shard"] = in.doc["shard"];
    sources.push_back(source);
  }
  std::sort(outcome.results.begin(), outcome.results.end(), suite_order);
  for (const auto& d : mixed) outcome.warnings.push_back("mixed runs: " + d);

  json doc = stamp_schema({{"size", joined(inputs, &RunIdentity::size)},
                           {"target", joined(inputs, &RunIdentity::target)},
                           {"isa_level", joined(inputs, &RunIdentity::isa_level)},
                           // Machine time of all the pieces (they may have run in parallel).
                           {"seconds", seconds},
                           {"machine", inputs[0].doc.value("machine", json::object())},
                           {"hosts", hosts},
                           {"merged_from", sources},
                           {"summary", scoreboard_json(outcome.results)},
                           {"results", json::array()}},
                          "opbench.run");
  if (!mixed.empty()) doc["mixed"] = mixed;
  fs::create_directories(out);
  for (const auto& r : outcome.results) {
    json j = to_json(r);
    write_json_atomic(out / (evaluation_name(r.workload, r.impl.kind) + ".json"), j);
    doc["results"].push_back(std::move(j));
  }
  write_json_atomic(out / "results.json", doc);
  outcome.document = std::move(doc);
  return outcome;
}

}  // namespace opbench
