// opbench lint: checks every workload's data and spec at the test size (see harness/lint.h).

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json_io.h"
#include "harness/lint.h"
#include "report/table.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_lint(CLI::App& root) {
  auto* app = root.add_subcommand("lint", "Check that each workload's data and spec can tell right kernels from wrong ones");
  struct Options {
    std::string workloads = "all", json_path, target = "cpu";
    bool verbose = false;
  };
  auto o = std::make_shared<Options>();
  app->add_option("--workloads", o->workloads, "Comma-separated ids, prefixes or globs (default: all)");
  app->add_option("--json", o->json_path, "Write the findings as JSON");
  app->add_option("--target", o->target, "Target whose dtype the lint resolves workloads with")->check(CLI::IsMember(target_names()))->capture_default_str();
  app->add_flag("-v,--verbose", o->verbose, "Show every finding, not only failures");
  return {app, [o] {
            Registry registry(Registry::default_root());
            auto target = make_target(o->target);
            TextTable table({"workload", "checks", "failed", "FLOPs/counted"});
            nlohmann::json all = nlohmann::json::array();
            std::string failures;
            int failed_workloads = 0;
            for (const WorkloadSpec* spec : registry.select(o->workloads)) {
              progress_line(fmt::format("linting {}", spec->id));
              LintReport r;
              try {
                r = lint_workload(*spec, *target);
              } catch (const std::exception& e) {
                r.workload = spec->id;
                r.findings.push_back({"runs", true, e.what()});
              }
              progress_done();
              size_t failed = 0;
              for (const auto& f : r.findings) {
                if (f.failed) {
                  ++failed;
                  failures += fmt::format("  {} {}: {}\n", r.workload, f.check, f.detail);
                } else if (o->verbose) {
                  fmt::print("  {} {}: ok: {}\n", r.workload, f.check, f.detail);
                }
              }
              if (failed) ++failed_workloads;
              table.add_row({r.workload, std::to_string(r.findings.size()), std::to_string(failed),
                             r.counted_operations > 0 ? fmt::format("{:.3f}", r.formula_flops / r.counted_operations) : "-"});
              all.push_back(to_json(r));
            }
            // A spec that does not load fails the lint like any other finding.
            for (const BrokenWorkload* b : registry.select_broken(o->workloads)) {
              ++failed_workloads;
              failures += fmt::format("  {} loads: {}\n", b->id, b->reason);
              table.add_row({b->id, "1", "1", "-"});
              all.push_back({{"workload", b->id}, {"findings", {{{"check", "loads"}, {"failed", true}, {"detail", b->reason}}}}});
            }
            fmt::print("{}", table.render());
            if (!failures.empty()) fmt::print("\nfailures:\n{}", failures);
            fmt::print("\n{} of {} workloads pass the lint\n", all.size() - size_t(failed_workloads), all.size());
            if (!o->json_path.empty()) write_json_atomic(o->json_path, all);
            return failed_workloads == 0 ? 0 : 1;
          }};
}

}  // namespace opbench::cli
