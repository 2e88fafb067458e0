#include "report/report_data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "calibrate/roofline.h"
#include "core/error.h"
#include "core/files.h"
#include "report/scoreboard.h"

namespace opbench {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json parse_file(const fs::path& path) {
  json j = json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) throw UsageError(fmt::format("{} is not JSON", path.string()));
  return j;
}

Result read_result(const json& j, const std::string& where) {
  try {
    return result_from_json(j);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: not a readable opbench result: {}", where, e.what()));
  }
}

void add_run_document(const json& j, const fs::path& where, ReportData* data) {
  for (const auto& r : j.at("results")) data->results.push_back(read_result(r, where.string()));
  if (auto it = j.find("machine_profile"); it != j.end() && it->is_object() && !data->profile) {
    try {
      data->profile = profile_from_json(*it, where.string());
    } catch (const std::exception&) {
      // A profile of another schema version: the roofline blocks already in the results still serve.
    }
  }
}

// Candidates of one workload's search, grouped by iteration, with the running best speedup.
std::vector<SearchIteration> iterations_from_state(const json& state) {
  std::map<int, SearchIteration> by_iteration;
  for (const auto& c : state.value("evaluated", json::array())) {
    SearchIteration& it = by_iteration[c.value("iteration", 0)];
    it.iteration = c.value("iteration", 0);
    ++it.evaluated;
    if (c.value("status", "") == "correct") {
      ++it.correct;
      it.best_speedup = std::max(it.best_speedup, c.value("speedup", 0.0));
    }
  }
  std::vector<SearchIteration> out;
  double best = 0;
  for (auto& [n, it] : by_iteration) {
    best = std::max(best, it.best_speedup);
    it.best_speedup = best;
    out.push_back(it);
  }
  return out;
}

double geomean(const std::vector<double>& xs) {
  if (xs.empty()) return NAN;
  double sum = 0;
  for (double x : xs) sum += std::log(x);
  return std::exp(sum / double(xs.size()));
}

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

SearchRunReport load_search_run(const fs::path& dir, std::vector<Result>* results) {
  SearchRunReport run;
  run.dir = dir.string();
  std::vector<SearchSummary> summaries;
  if (fs::exists(dir / "run.json")) {
    const json j = parse_file(dir / "run.json");
    if (j.value("schema", "") != "opbench.search.run") throw UsageError(fmt::format("{} is not an opbench search run", (dir / "run.json").string()));
    run.label = j.value("label", dir.filename().string());
    run.proposer = j.value("proposer", "");
    for (const auto& w : j.at("workloads")) summaries.push_back(SearchSummary::from_json(w));
  } else if (fs::exists(dir / "summary.json")) {  // one workload's folder
    summaries.push_back(SearchSummary::from_json(parse_file(dir / "summary.json")));
    run.label = summaries.back().proposer;
    run.proposer = summaries.back().proposer;
  } else {
    throw UsageError(fmt::format("{} has neither run.json nor summary.json", dir.string()));
  }
  for (const auto& s : summaries) {
    SearchWorkloadReport w;
    w.summary = s;
    // run.json sits above the workload folders; a workload folder holds its own state.
    const fs::path wdir = fs::exists(dir / s.workload / "state.json") ? dir / s.workload : dir;
    if (fs::exists(wdir / "state.json")) w.iterations = iterations_from_state(parse_file(wdir / "state.json"));
    if (results && !s.best_source.empty()) {
      const fs::path best = wdir / "candidates" / fs::path(s.best_source).filename().replace_extension(".json");
      if (fs::exists(best)) results->push_back(read_result(parse_file(best), best.string()));
    }
    run.workloads.push_back(std::move(w));
  }
  return run;
}

ReportData load_report_inputs(const std::vector<std::string>& paths) {
  ReportData data;
  for (const auto& arg : paths) {
    const fs::path path = arg;
    if (fs::is_directory(path)) {
      if (fs::exists(path / "results.json")) add_run_document(parse_file(path / "results.json"), path / "results.json", &data);
      else if (fs::exists(path / "run.json") || fs::exists(path / "summary.json")) data.searches.push_back(load_search_run(path, &data.results));
      else throw UsageError(fmt::format("{}: no results.json (an opbench run folder) or run.json (an opbench search folder)", arg));
      continue;
    }
    if (!fs::is_regular_file(path)) throw UsageError(fmt::format("{} not found", arg));
    const json j = parse_file(path);
    const std::string schema = j.is_object() ? j.value("schema", "") : "";
    if (schema == "opbench.run") add_run_document(j, path, &data);
    else if (schema == "opbench.result") data.results.push_back(read_result(j, arg));
    else if (schema == "opbench.search.run") data.searches.push_back(load_search_run(path.parent_path().empty() ? "." : path.parent_path(), &data.results));
    else if (schema == kMachineProfileSchema) data.profile = profile_from_json(j, arg);
    else throw UsageError(fmt::format("{}: not an opbench result, run, search run or machine profile (schema '{}')", arg, schema));
  }
  if (!data.profile) {
    for (const auto& r : data.results)
      if (r.roofline && !r.roofline->profile_id.empty())
        if ((data.profile = load_profile_by_id(profile_dir(), r.roofline->profile_id))) break;
  }
  if (data.profile)
    for (auto& r : data.results)
      if (!r.roofline) attach_roofline(r, *data.profile);
  return data;
}

ReportTable search_leaderboard(const std::vector<SearchRunReport>& runs) {
  ReportTable t;
  t.title = "Leaderboard";
  t.columns = {"run", "workloads", "candidates", "correctness rate", "fast_1", "geomean speedup", "share of expert", "machine s",
               "agent s", "tokens"};
  if (runs.empty()) return t;
  std::set<std::string> common;
  for (const auto& w : runs.front().workloads) common.insert(w.summary.workload);
  for (const auto& run : runs) {
    std::set<std::string> have;
    for (const auto& w : run.workloads) have.insert(w.summary.workload);
    for (auto it = common.begin(); it != common.end();) it = have.count(*it) ? std::next(it) : common.erase(it);
  }
  for (const auto& run : runs) {
    size_t evaluated = 0, correct = 0, fast = 0;
    double machine_s = 0, agent_s = 0;
    int64_t tokens = 0;
    std::vector<double> speedups, shares;
    for (const auto& w : run.workloads) {
      const SearchSummary& s = w.summary;
      if (!common.count(s.workload)) continue;
      evaluated += s.evaluated;
      correct += s.correct;
      fast += s.best_speedup > 1.0;
      machine_s += s.build_s + s.eval_s;
      agent_s += s.proposer_s;
      tokens += s.prompt_tokens + s.completion_tokens;
      const double best = s.best_speedup > 0 ? s.best_speedup : 1.0;  // nothing correct: the baseline stands
      speedups.push_back(best);
      if (s.expert_speedup > 0) shares.push_back(best / s.expert_speedup);
    }
    t.rows.push_back({run.label, common.size(), evaluated, number(evaluated ? double(correct) / double(evaluated) : NAN),
                      number(common.empty() ? NAN : double(fast) / double(common.size())), number(geomean(speedups)),
                      number(geomean(shares)), machine_s, agent_s, tokens});
  }
  t.notes.push_back(fmt::format("On the {} workload(s) all runs share; geomean speedup: the best correct kernel per workload, "
                                "1.0 where a run found none.", common.size()));
  return t;
}

ReportTable results_table(const std::vector<Result>& results) {
  ReportTable t;
  t.title = "Scoreboard";
  t.columns = {"workload", "impl",    "status",    "median ms", "baseline ms", "speedup", "ci95 low", "ci95 high",
               "% of roofline", "GFLOP/s", "GB/s", "FLOP/B", "bound", "flags", "message"};
  for (const auto& r : results) {
    std::vector<json> row{r.workload, r.impl.kind, std::string(status_name(r.status))};
    const bool timed = r.timing.has_value();
    row.push_back(timed ? number(r.timing->per_call_ms.median) : json(nullptr));
    row.push_back(timed ? number(r.timing->baseline_per_call_ms.median) : json(nullptr));
    row.push_back(r.speedup ? number(r.speedup->vs_baseline) : json(nullptr));
    row.push_back(r.speedup ? number(r.speedup->ci95_low) : json(nullptr));
    row.push_back(r.speedup ? number(r.speedup->ci95_high) : json(nullptr));
    row.push_back(r.roofline ? number(100 * r.roofline->fraction) : json(nullptr));
    row.push_back(timed ? number(r.work.gflops_per_s) : json(nullptr));
    row.push_back(timed ? number(r.work.gbytes_per_s) : json(nullptr));
    row.push_back(number(r.roofline ? r.roofline->useful_intensity : r.work.intensity));
    row.push_back(r.roofline ? json(r.roofline->bound) : json(nullptr));
    std::vector<std::string> flags = r.timing ? r.timing->flags : std::vector<std::string>{};
    if (r.roofline) flags.insert(flags.end(), r.roofline->flags.begin(), r.roofline->flags.end());
    std::string joined;
    for (const auto& f : flags) joined += (joined.empty() ? "" : " ") + f;
    row.push_back(joined);
    row.push_back(r.message);
    t.rows.push_back(std::move(row));
  }
  return t;
}

json summary_by_kind(const std::vector<Result>& results) {
  json out = {{"all", scoreboard_json(results)}, {"by_kind", json::object()}};
  std::vector<std::string> kinds;
  for (const auto& r : results)
    if (std::find(kinds.begin(), kinds.end(), r.impl.kind) == kinds.end()) kinds.push_back(r.impl.kind);
  for (const auto& kind : kinds) {
    std::vector<Result> of_kind;
    for (const auto& r : results)
      if (r.impl.kind == kind) of_kind.push_back(r);
    out["by_kind"][kind] = scoreboard_json(of_kind);
  }
  return out;
}

}  // namespace opbench
