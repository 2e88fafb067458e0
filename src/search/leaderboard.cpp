#include "search/leaderboard.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_io.h"

namespace opbench {
namespace {

double geomean(const std::vector<double>& xs) {
  if (xs.empty()) return NAN;
  double sum = 0;
  for (double x : xs) sum += std::log(x);
  return std::exp(sum / double(xs.size()));
}

}  // namespace

SearchRun load_search_run(const std::filesystem::path& dir) {
  const auto path = dir / "run.json";
  if (!std::filesystem::exists(path)) throw UsageError(fmt::format("{} has no run.json (give the --out folder of an opbench search)", dir.string()));
  nlohmann::json j;
  try {
    j = read_json_document(path, kSearchRunSchema);
    SearchRun run{j.value("label", dir.string()), dir.string(), {}, {}};
    run.isa = j.value("settings", nlohmann::json::object()).value("isa", "");
    if (run.isa.empty()) run.isa = "x86-64-v3";  // the only level before levels existed
    for (const auto& w : j.at("workloads")) {
      SearchSummary s = SearchSummary::from_json(w);
      run.by_workload[s.workload] = s;
    }
    return run;
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{} is not an opbench search run this program reads: {}", path.string(), e.what()));
  }
}

Leaderboard compute_leaderboard(const std::vector<SearchRun>& runs) {
  if (runs.empty()) throw UsageError("no runs to compare");
  for (const auto& run : runs)
    if (run.isa != runs.front().isa)
      throw UsageError(fmt::format("{} searched at --isa {} and {} at --isa {}: runs at different instruction-set levels are never ranked together",
                                   runs.front().dir, runs.front().isa, run.dir, run.isa));
  std::set<std::string> common;
  for (const auto& [w, s] : runs.front().by_workload) common.insert(w);
  for (const auto& run : runs)
    for (auto it = common.begin(); it != common.end();) it = run.by_workload.count(*it) ? std::next(it) : common.erase(it);
  if (common.empty()) throw UsageError("the runs share no workload");

  Leaderboard board;
  board.isa = runs.front().isa;
  board.workloads.assign(common.begin(), common.end());
  for (const auto& run : runs) {
    LeaderboardRow row;
    row.label = run.label;
    row.dir = run.dir;
    size_t correct = 0, fast = 0;
    std::vector<double> speedups, shares;
    for (const auto& w : common) {
      const SearchSummary& s = run.by_workload.at(w);
      row.candidates += s.evaluated;
      correct += s.correct;
      fast += s.best_speedup > 1.0;
      row.machine_s += s.build_s + s.eval_s;
      row.agent_s += s.proposer_s;
      row.tokens += s.prompt_tokens + s.completion_tokens;
      for (const auto& [kind, n] : s.failures) row.failures += n;
      const double best = s.best_speedup > 0 ? s.best_speedup : 1.0;  // no correct kernel: the baseline stands
      speedups.push_back(best);
      if (s.expert_speedup > 0) shares.push_back(best / s.expert_speedup);
      if (s.no_successful_agent_call() && row.competed) {
        row.competed = false;
        row.not_ranked_because = fmt::format("no successful agent call on {}", w);
      }
    }
    row.correctness_rate = row.candidates ? double(correct) / double(row.candidates) : 0;
    row.fast_1 = double(fast) / double(common.size());
    row.geomean_speedup = geomean(speedups);
    if (!shares.empty()) row.share_of_expert = geomean(shares);
    board.rows.push_back(row);
  }
  // Ranks among the runs that competed, best geomean first; ties share a rank.
  std::vector<LeaderboardRow*> ranked;
  for (auto& r : board.rows)
    if (r.competed) ranked.push_back(&r);
  std::stable_sort(ranked.begin(), ranked.end(), [](auto* a, auto* b) { return a->geomean_speedup > b->geomean_speedup; });
  for (size_t i = 0; i < ranked.size(); ++i)
    ranked[i]->rank = i > 0 && ranked[i]->geomean_speedup == ranked[i - 1]->geomean_speedup ? ranked[i - 1]->rank : int(i) + 1;
  return board;
}

nlohmann::json Leaderboard::to_json() const {
  nlohmann::json rows_json = nlohmann::json::array();
  for (const auto& r : rows)
    rows_json.push_back({{"label", r.label},
                         {"dir", r.dir},
                         {"rank", r.rank == 0 ? nlohmann::json(nullptr) : nlohmann::json(r.rank)},
                         {"competed", r.competed},
                         {"not_ranked_because", r.not_ranked_because},
                         {"candidates", r.candidates},
                         {"correctness_rate", r.correctness_rate},
                         {"fast_1", r.fast_1},
                         {"geomean_speedup", r.geomean_speedup},
                         {"share_of_expert", r.share_of_expert ? nlohmann::json(*r.share_of_expert) : nlohmann::json(nullptr)},
                         {"machine_s", r.machine_s},
                         {"agent_s", r.agent_s},
                         {"tokens", r.tokens},
                         {"failures", r.failures}});
  return stamp_schema({{"isa", isa}, {"workloads", workloads}, {"runs", rows_json}}, kLeaderboardSchema);
}

}  // namespace opbench
