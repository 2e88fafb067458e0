// opbench prompt WORKLOAD --phase translate|plan|implement: prints the prompt a proposer gets, with
// the curated context or without it (--context none, the ablation).
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/files.h"
#include "harness/result.h"
#include "search/prompt.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_prompt(CLI::App& root) {
  auto* app = root.add_subcommand("prompt", "Print the prompt the search would give a proposer");
  struct Options {
    std::string workload, phase = "translate", context = "full", parent, plan, feedback, size, target;
    int candidates = 4;
    double dropout = 0;
    uint64_t seed = 1;
    std::vector<std::string> set;
  };
  auto o = std::make_shared<Options>();
  app->add_option("workload", o->workload, "Workload id or unique prefix")->required();
  app->add_option("--phase", o->phase, "translate, plan or implement")->check(CLI::IsMember({"translate", "plan", "implement"}))->capture_default_str();
  app->add_option("--context", o->context, "full: with context/cpu; none: without (the ablation)")->check(CLI::IsMember({"full", "none"}))->capture_default_str();
  app->add_option("--parent", o->parent, "The parent kernel (plan, implement)");
  app->add_option("--plan", o->plan, "A file with the plan to implement (implement)");
  app->add_option("--feedback", o->feedback, "A result JSON (opbench eval --json) to report back");
  app->add_option("--candidates", o->candidates, "Plans asked for (plan)")->check(CLI::Range(1, 100))->capture_default_str();
  app->add_option("--menu-dropout", o->dropout, "Share of optimization-menu entries left out (plan)")->check(finite_number(0, 1, true))->capture_default_str();
  app->add_option("--seed", o->seed, "Which menu entries the dropout removes")->check(seed_value())->capture_default_str();
  add_target_flags(app, o->target, o->size, "Size class whose shapes the prompt states");
  app->add_option("--set", o->set, "Override a shape symbol");
  return {app, [o] {
            Registry registry(Registry::default_root());
            const WorkloadSpec& spec = registry.find(o->workload);
            o->size = resolve_size(o->target, o->size);
            const ResolvedWorkload w = resolve_workload(spec, o->size, parse_overrides(o->set), target_info(o->target).float_dtype);
            PromptOptions p;
            p.context_dir = context_dir_for(o->target);
            p.target = o->target;
            p.phase = o->phase;
            p.context = o->context == "full";
            p.candidates = o->candidates;
            p.menu_dropout = o->dropout;
            p.seed = o->seed;
            auto read_required = [](const std::string& path, const char* what) {
              if (!std::filesystem::is_regular_file(path)) throw UsageError(fmt::format("{} '{}' not found", what, path));
              return read_file(path);
            };
            if (!o->parent.empty()) p.parent_source = read_required(o->parent, "parent kernel");
            if (!o->plan.empty()) p.plan = read_required(o->plan, "plan file");
            if (!o->feedback.empty()) {
              auto j = nlohmann::json::parse(read_required(o->feedback, "feedback file"), nullptr, false);
              if (j.is_discarded()) throw UsageError(fmt::format("{} is not JSON", o->feedback));
              try {
                p.feedback = feedback_from_result(result_from_json(j));
              } catch (const std::exception& e) {
                throw UsageError(fmt::format("{} is not an opbench result: {}", o->feedback, e.what()));
              }
            }
            fmt::print("{}", assemble_prompt(spec, w, p));
            return 0;
          }};
}

}  // namespace opbench::cli
