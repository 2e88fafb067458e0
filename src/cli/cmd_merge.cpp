// opbench merge DIRS... --out DIR: shard results (or runs of disjoint workloads) into one run.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cluster/merge.h"
#include "report/scoreboard.h"

namespace opbench::cli {

Command add_merge(CLI::App& root) {
  auto* app = root.add_subcommand("merge", "Combine the results of run folders (the shards of a run) into one run");
  struct Options {
    std::vector<std::string> dirs;
    std::string out;
    MergeOptions merge;
  };
  auto o = std::make_shared<Options>();
  app->add_option("dirs", o->dirs, "Run folders, each with a results.json")->required();
  app->add_option("--out", o->out, "Folder for the merged run")->required();
  app->add_flag("--allow-mixed", o->merge.allow_mixed, "Merge runs of different targets, sizes, ISA levels or machines (recorded in the result)");
  app->add_flag("--allow-partial", o->merge.allow_partial, "Merge the shards there are when some are missing");
  return {app, [o] {
            std::vector<std::filesystem::path> dirs(o->dirs.begin(), o->dirs.end());
            MergeOutcome m = merge_runs(dirs, o->out, o->merge);
            fmt::print("{}", render_scoreboard(m.results));
            for (const auto& w : m.warnings) fmt::print("  warning: {}\n", w);
            fmt::print("{} results from {} folders merged into {}\n", m.results.size(), dirs.size(), (std::filesystem::path(o->out) / "results.json").string());
            return 0;
          }};
}

}  // namespace opbench::cli
