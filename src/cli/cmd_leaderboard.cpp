// opbench leaderboard RUN...: searches (different agents or settings) on the same workloads, side
// by side. The metrics are computed in search/leaderboard.{h,cpp}; this file only prints them.
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json_io.h"
#include "report/reporter.h"
#include "report/table.h"
#include "search/leaderboard.h"

namespace opbench::cli {

Command add_leaderboard(CLI::App& root) {
  auto* app = root.add_subcommand("leaderboard", "Compare searches side by side (the --out folders of opbench search)");
  auto runs = std::make_shared<std::vector<std::string>>();
  auto json_out = std::make_shared<std::string>();
  app->add_option("runs", *runs, "Search output folders")->required();
  app->add_option("--json", *json_out, "Also write the leaderboard as JSON");
  return {app, [runs, json_out] {
            std::vector<SearchRun> loaded;
            for (const auto& r : *runs) loaded.push_back(load_search_run(r));
            const Leaderboard board = compute_leaderboard(loaded);

            TextTable table({"rank", "run", "candidates", "correct", "fast_1", "geomean speedup", "share of expert", "machine s", "agent s",
                             "tokens", "failures"});
            for (const auto& r : board.rows)
              table.add_row({r.rank ? std::to_string(r.rank) : "-", r.label, std::to_string(r.candidates),
                             fmt::format("{:.0f}%", 100 * r.correctness_rate), fmt::format("{:.2f}", r.fast_1),
                             fmt::format("{:.3f}", r.geomean_speedup), r.share_of_expert ? fmt::format("{:.2f}", *r.share_of_expert) : "-",
                             fmt::format("{:.0f}", r.machine_s), fmt::format("{:.0f}", r.agent_s), r.tokens ? std::to_string(r.tokens) : "-",
                             std::to_string(r.failures)});
            fmt::print("{}", table.render());
            for (const auto& r : board.rows)
              if (!r.competed) fmt::print("{}: not ranked ({})\n", r.label, r.not_ranked_because);
            fmt::print("\nOn the {} workload(s) all runs share. geomean speedup: best correct kernel per workload over the baseline, "
                       "1.0 where a run found none; share of expert: the same over the expert's speedup.\n\n",
                       board.workloads.size());
            std::vector<std::string> header{"workload"};
            for (const auto& run : loaded) header.push_back(run.label);
            TextTable per_workload(header);
            for (const auto& w : board.workloads) {
              std::vector<std::string> row{w};
              for (const auto& run : loaded) {
                const SearchSummary& s = run.by_workload.at(w);
                row.push_back(s.best_speedup > 0 ? fmt::format("{:.3f}x ({}/{})", s.best_speedup, s.correct, s.evaluated)
                                                 : fmt::format("- (0/{})", s.evaluated));
              }
              per_workload.add_row(row);
            }
            fmt::print("{}", per_workload.render());
            if (!json_out->empty()) write_json_atomic(*json_out, board.to_json());
            return 0;
          }};
}

}  // namespace opbench::cli
