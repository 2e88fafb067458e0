// opbench crosscheck WORKLOADS --target cuda: each workload's baseline (or expert) on the target
// against the fp32 reference on the cpu, on the same inputs (harness/crosscheck.h). The baseline is
// the oracle of every evaluation on its target; this is what checks the oracle.
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "harness/crosscheck.h"
#include "report/table.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_crosscheck(CLI::App& root) {
  auto* app = root.add_subcommand("crosscheck", "Check a target's baselines (or experts) against the cpu's fp32 reference on the same inputs");
  struct Options {
    std::string workloads, impl = "baseline", target = "cuda", size = "test";
    int trials = 2;
    uint64_t seed = 1;
  };
  auto o = std::make_shared<Options>();
  app->add_option("workloads", o->workloads, "Comma-separated ids, prefixes or globs")->required();
  app->add_option("--impl", o->impl, "baseline or expert")->check(CLI::IsMember({"baseline", "expert"}))->capture_default_str();
  add_target_flags(app, o->target, o->size, "Size class (the reference runs on the cpu: keep it small)");
  // The point is another target than the reference's: cuda where this build has it.
  for (const auto& name : target_names())
    if (name == "cuda") o->target = name;
  o->size = "test";
  app->add_option("--trials", o->trials, "Fresh input sets per workload")->check(CLI::Range(1, 64))->capture_default_str();
  app->add_option("--seed", o->seed, "First seed")->check(seed_value())->capture_default_str();
  return {app, [o] {
            Registry registry(Registry::default_root());
            o->size = resolve_size(o->target, o->size);
            auto target = make_target(o->target);
            auto reference = make_target("cpu");
            TextTable table({"workload", "impl", "status", "max abs err", "max rel err", "elements", "detail"});
            size_t failed = 0, checked = 0;
            for (const WorkloadSpec* spec : registry.select(o->workloads)) {
              if (!spec->has_implementation(o->impl, target->source_extension())) continue;
              ++checked;
              progress_line(fmt::format("cross-checking {} {} on {}", spec->id, o->impl, target->name()));
              const CrossCheckResult r = cross_check(*spec, builtin_implementation(*spec, o->impl, target->source_extension()), *target,
                                                     *reference, o->size, o->trials, o->seed);
              progress_done();
              Comparison all;
              for (const auto& t : r.trials) all.merge(t.comparison);
              table.add_row({spec->id, o->impl, r.passed ? "pass" : "FAIL", fmt::format("{:.3g}", all.max_abs_err),
                             fmt::format("{:.3g}", all.max_rel_err), std::to_string(all.elements), r.message.substr(0, 160)});
              failed += !r.passed;
            }
            if (checked == 0) throw UsageError(fmt::format("none of the selected workloads has a {}{}", o->impl, target->source_extension()));
            fmt::print("{}", table.render());
            fmt::print("\n{} of {} match the reference on target {} at size {} ({} trial(s) each)\n", checked - failed, checked, target->name(),
                       o->size, o->trials);
            return failed ? 1 : 0;
          }};
}

}  // namespace opbench::cli
