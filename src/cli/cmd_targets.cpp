// opbench targets: the targets this build knows, whether each can build and run kernels here, and
// why not. `--require NAME` exits 77 (the test suites' "skipped") when NAME cannot run here, so GPU
// tests skip with the reason on machines without a GPU.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "core/error.h"
#include "report/table.h"
#include "targets/registry.h"

namespace opbench::cli {

Command add_targets(CLI::App& root) {
  auto* app = root.add_subcommand("targets", "List the targets, their size classes and whether they can build and run here");
  auto require = std::make_shared<std::string>();
  app->add_option("--require", *require, "Exit 77 with the reason unless this target can run here")->check(CLI::IsMember(target_names()));
  return {app, [require] {
            if (!require->empty()) {
              const TargetInfo& t = target_info(*require);
              const std::string why = t.unavailable ? t.unavailable() : std::string();
              if (!why.empty()) {
                fmt::print("skipped: target {} cannot run here: {}\n", t.name, why);
                return 77;
              }
              fmt::print("target {} can run here\n", t.name);
              return 0;
            }
            TextTable table({"target", "sizes", "default", "files", "builds here", "runs here"});
            for (const auto& t : target_registry()) {
              const std::string run_why = t.unavailable ? t.unavailable() : std::string();
              const auto& build_check = t.unbuildable ? t.unbuildable : t.unavailable;
              const std::string build_why = build_check ? build_check() : std::string();
              table.add_row({t.name, fmt::format("{}", fmt::join(t.sizes, ", ")), t.default_size, "*" + t.source_extension,
                             build_why.empty() ? "yes" : "no: " + build_why, run_why.empty() ? "yes" : "no: " + run_why});
            }
            fmt::print("{}", table.render());
            return 0;
          }};
}

}  // namespace opbench::cli
