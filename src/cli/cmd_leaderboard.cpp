// opbench leaderboard RUN...: searches (different agents or settings) on the same workloads, side
// by side: correctness rate, fast_1, geomean speedup, share of the expert recovered, cost.
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/files.h"
#include "core/json_io.h"
#include "report/table.h"
#include "search/beam_search.h"

namespace opbench::cli {
namespace {

struct Run {
  std::string label, dir;
  std::string isa;  // the instruction-set level it searched at (runs from before levels: x86-64-v3)
  std::map<std::string, SearchSummary> by_workload;
};

Run load_run(const std::string& dir) {
  const auto path = std::filesystem::path(dir) / "run.json";
  if (!std::filesystem::exists(path)) throw UsageError(fmt::format("{} has no run.json (give the --out folder of an opbench search)", dir));
  auto j = nlohmann::json::parse(read_file(path), nullptr, false);
  if (j.is_discarded() || j.value("schema", "") != "opbench.search.run") throw UsageError(fmt::format("{} is not an opbench search run", path.string()));
  Run run{j.value("label", dir), dir, {}, {}};
  run.isa = j.value("settings", nlohmann::json::object()).value("isa", "x86-64-v3");
  for (const auto& w : j.at("workloads")) {
    SearchSummary s = SearchSummary::from_json(w);
    run.by_workload[s.workload] = s;
  }
  return run;
}

double geomean(const std::vector<double>& xs) {
  if (xs.empty()) return NAN;
  double sum = 0;
  for (double x : xs) sum += std::log(x);
  return std::exp(sum / double(xs.size()));
}

}  // namespace

Command add_leaderboard(CLI::App& root) {
  auto* app = root.add_subcommand("leaderboard", "Compare searches side by side (the --out folders of opbench search)");
  auto runs = std::make_shared<std::vector<std::string>>();
  auto json_out = std::make_shared<std::string>();
  app->add_option("runs", *runs, "Search output folders")->required();
  app->add_option("--json", *json_out, "Also write the leaderboard as JSON");
  return {app, [runs, json_out] {
            std::vector<Run> loaded;
            for (const auto& r : *runs) loaded.push_back(load_run(r));
            // Speedups over a baseline at another instruction-set level are not comparable: never ranked together.
            for (const auto& run : loaded)
              if (run.isa != loaded.front().isa)
                throw UsageError(fmt::format("{} searched at --isa {} and {} at --isa {}: runs at different instruction-set levels are "
                                             "never ranked together",
                                             loaded.front().dir, loaded.front().isa, run.dir, run.isa));
            // Compare on the workloads every run has.
            std::set<std::string> common;
            for (const auto& [w, s] : loaded.front().by_workload) common.insert(w);
            for (const auto& run : loaded)
              for (auto it = common.begin(); it != common.end();) it = run.by_workload.count(*it) ? std::next(it) : common.erase(it);
            if (common.empty()) throw UsageError("the runs share no workload");

            TextTable board({"run", "workloads", "candidates", "correct", "fast_1", "geomean speedup", "share of expert", "machine s", "tokens"});
            nlohmann::json out = {{"schema", "opbench.leaderboard"}, {"version", 1}, {"isa", loaded.front().isa}, {"workloads", common}, {"runs", nlohmann::json::array()}};
            for (const auto& run : loaded) {
              size_t evaluated = 0, correct = 0, fast = 0;
              double machine_s = 0;
              int64_t tokens = 0;
              std::vector<double> speedups, shares;
              for (const auto& w : common) {
                const SearchSummary& s = run.by_workload.at(w);
                evaluated += s.evaluated;
                correct += s.correct;
                fast += s.best_speedup > 1.0;
                machine_s += s.build_s + s.eval_s;
                tokens += s.prompt_tokens + s.completion_tokens;
                const double best = s.best_speedup > 0 ? s.best_speedup : 1.0;  // no correct kernel: the baseline stands
                speedups.push_back(best);
                if (s.expert_speedup > 0) shares.push_back(best / s.expert_speedup);
              }
              const double rate = evaluated ? double(correct) / double(evaluated) : 0;
              const double fast_1 = double(fast) / double(common.size());
              board.add_row({run.label, std::to_string(common.size()), std::to_string(evaluated), fmt::format("{:.0f}%", 100 * rate),
                         fmt::format("{:.2f}", fast_1), fmt::format("{:.3f}", geomean(speedups)),
                         shares.empty() ? "-" : fmt::format("{:.2f}", geomean(shares)), fmt::format("{:.0f}", machine_s),
                         tokens ? std::to_string(tokens) : "-"});
              out["runs"].push_back({{"label", run.label}, {"dir", run.dir}, {"candidates", evaluated}, {"correctness_rate", rate},
                                     {"fast_1", fast_1}, {"geomean_speedup", geomean(speedups)},
                                     {"share_of_expert", shares.empty() ? nlohmann::json(nullptr) : nlohmann::json(geomean(shares))},
                                     {"machine_s", machine_s}, {"tokens", tokens}});
            }
            fmt::print("{}", board.render());
            fmt::print("\nOn the {} workload(s) all runs share. geomean speedup: best correct kernel per workload over the baseline, "
                       "1.0 where a run found none; share of expert: the same over the expert's speedup.\n\n",
                       common.size());
            std::vector<std::string> header{"workload"};
            for (const auto& run : loaded) header.push_back(run.label);
            TextTable per_workload(header);
            for (const auto& w : common) {
              std::vector<std::string> row{w};
              for (const auto& run : loaded) {
                const SearchSummary& s = run.by_workload.at(w);
                row.push_back(s.best_speedup > 0 ? fmt::format("{:.3f}x ({}/{})", s.best_speedup, s.correct, s.evaluated)
                                                 : fmt::format("- (0/{})", s.evaluated));
              }
              per_workload.add_row(row);
            }
            fmt::print("{}", per_workload.render());
            if (!json_out->empty()) write_text_atomic(*json_out, out.dump(2));
            return 0;
          }};
}

}  // namespace opbench::cli
