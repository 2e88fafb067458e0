// opbench search WORKLOAD... --proposer SPEC: beam search over candidates from a proposer, each
// evaluated by the harness; state under --out so an interrupted search resumes.
#include <fmt/format.h>

#include "calibrate/roofline.h"
#include "cli/commands.h"
#include "cli/slurm_flags.h"
#include "core/error.h"
#include "core/files.h"
#include "core/json_io.h"
#include "report/reporter.h"
#include "search/beam_search.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

void print_search_summary(const SearchSummary& s) {
  fmt::print("\n{} with {}: {}\n", s.workload, s.proposer, s.stop_reason);
  fmt::print("  best speedup over the baseline  {}\n",
             s.best_speedup > 0 ? fmt::format("{:.3f}x ({:.4f} ms vs {:.4f} ms)  {}", s.best_speedup, s.best_ms, s.baseline_ms, s.best_source)
                                : std::string("none (no correct candidate)"));
  if (s.expert_speedup > 0)
    fmt::print("  share of the expert             {:.2f} (expert {:.3f}x)\n", s.share_of_expert, s.expert_speedup);
  fmt::print("  candidates                      {} evaluated ({} new in this run), {} built, {} correct: {:.0f}% correct; {} duplicates skipped\n",
             s.evaluated, s.evaluated_now, s.built, s.correct, 100 * s.correctness_rate(), s.duplicates);
  fmt::print("  agent calls                     {} ({} answered usefully)\n", s.agent_calls, s.agent_calls_ok);
  if (!s.failures.empty()) {
    std::string kinds;
    for (const auto& [kind, n] : s.failures) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, kind);
    fmt::print("  failures                        {}\n", kinds);
  }
  fmt::print("  machine time                    build {:.1f} s, evaluation {:.1f} s; agent {:.1f} s (of which failed calls {:.1f} s)\n", s.build_s,
             s.eval_s, s.proposer_s, s.proposer_failed_s);
  if (s.prompt_tokens || s.completion_tokens) fmt::print("  tokens                          {} prompt, {} completion\n", s.prompt_tokens, s.completion_tokens);
  fmt::print("  pays back after                 {}\n",
             s.payback_calls > 0 ? fmt::format("{:.0f} calls of the kernel", s.payback_calls) : std::string("never (no speedup)"));
}

Command add_search(CLI::App& root) {
  auto* app = root.add_subcommand("search", "Beam search over kernels written by a proposer (an agent, a program, the tuner)");
  struct Options {
    std::vector<std::string> workloads;
    std::string proposer, out = "results/search", start, context = "full", label, expert = "on";
    SearchOptions search;
    SharedEvalFlags flags;
    std::string executor = "local";
    SlurmFlags slurm;
  };
  auto o = std::make_shared<Options>();
  app->add_option("workloads", o->workloads, "Workload ids or unique prefixes")->required();
  app->add_option("--proposer", o->proposer, "cmd:PROGRAM [ARGS], openai:MODEL or tune")->required();
  app->add_option("--out", o->out, "Folder of the search's state, candidates, logs and summaries")->capture_default_str();
  app->add_option("--label", o->label, "Name of this run on the leaderboard (default: the proposer)");
  app->add_option("--beam-width", o->search.beam_width, "Kernels kept per iteration")->check(CLI::Range(1, 1000000))->capture_default_str();
  app->add_option("--plans", o->search.plans_per_parent, "Plans asked for per parent")->check(CLI::Range(1, 1000000))->capture_default_str();
  app->add_option("--impls", o->search.impls_per_plan, "Implementations asked for per plan")->check(CLI::Range(1, 1000000))->capture_default_str();
  app->add_option("--iterations", o->search.iterations, "Optimization iterations")->check(CLI::Range(0, 1000000000))->capture_default_str();
  app->add_option("--menu-dropout", o->search.menu_dropout, "Share of optimization-menu entries left out of each plan prompt")
      ->check(finite_number(0, 1, true))->capture_default_str();
  app->add_option("--repairs", o->search.repairs, "Times a failed candidate is sent back with its errors")->check(CLI::Range(0, 100))->capture_default_str();
  app->add_option("--context", o->context, "full, or none for prompts without the curated context")->check(CLI::IsMember({"full", "none"}))->capture_default_str();
  app->add_option("--start", o->start, "Start from this kernel instead of translating the reference (default for tune: the expert)");
  app->add_option("--expert", o->expert, "Evaluate the expert for the share-of-expert figure")->check(CLI::IsMember({"on", "off"}))->capture_default_str();
  app->add_option("--max-evals", o->search.max_evals, "Stop after this many new evaluations; run again to resume")->check(CLI::Range(0, 1000000000))->capture_default_str();
  app->add_option("--seed", o->search.seed, "Seed of the requests (menu dropout, proposer sampling)")->check(seed_value())->capture_default_str();
  app->add_option("--max-source-bytes", o->search.max_source_bytes, "Largest candidate source accepted; a larger one is a counted failure")
      ->check(CLI::PositiveNumber)->capture_default_str();
  add_shared_eval_flags(app, o->flags);
  app->add_option("--executor", o->executor, "local: evaluate here; slurm: each evaluation a Slurm job (docs/cluster.md)")
      ->check(CLI::IsMember({"local", "slurm"}))->capture_default_str();
  std::set<const CLI::Option*> slurm_options;
  add_slurm_flags(app, o->slurm, &slurm_options);
  return {app, [o, app] {
            Registry registry(Registry::default_root());
            std::vector<const WorkloadSpec*> specs;
            for (const auto& w : o->workloads) specs.push_back(&registry.find(w));
            if (!o->start.empty() && !std::filesystem::is_regular_file(o->start)) throw UsageError(fmt::format("start kernel '{}' not found", o->start));
            if (!o->start.empty() && specs.size() > 1) throw UsageError("--start applies to one workload at a time");
            auto proposer = make_proposer(o->proposer);
            auto target = make_target(o->flags.target);
            end_agent_on_signals();
            SearchOptions options = o->search;
            options.target = o->flags.target;
            options.eval = make_eval_options(o->flags);
            options.out_dir = o->out;
            options.start = o->start;
            options.context = o->context == "full";
            options.compare_expert = o->expert == "on";
            if (o->executor == "slurm") {
              // Each job is an `opbench eval` on its node, which measures against that node's roofs.
              options.evaluator = slurm_search_evaluator(app, o->slurm, options.out_dir);
            } else {
              // The machine's roofs, as eval and run use them: every candidate is held against the
              // roofline floor (an impossibly fast one is untrusted, never the beam's best) and its
              // feedback quotes its share of the roofline.
              if (const auto profile = apply_machine_roofs(options.eval, options.target)) {
                options.evaluator = [measure = local_evaluator(*target, options.eval), profile](
                                        const WorkloadSpec& spec, const std::vector<Implementation>& candidates) {
                  std::vector<Result> results = measure(spec, candidates);
                  for (Result& r : results)
                    if (r.status != Status::harness_error) attach_roofline(r, *profile);
                  return results;
                };
              }
            }
            std::filesystem::create_directories(options.out_dir);
            nlohmann::json run = {{"label", o->label.empty() ? proposer->name() : o->label},
                                  {"proposer", proposer->name()},
                                  {"settings",
                                   {{"beam_width", options.beam_width}, {"plans", options.plans_per_parent}, {"impls", options.impls_per_plan},
                                    {"iterations", options.iterations}, {"menu_dropout", options.menu_dropout}, {"repairs", options.repairs},
                                    {"context", o->context}, {"size", options.eval.size}, {"target", options.target}, {"isa", options.eval.isa}}},
                                  {"workloads", nlohmann::json::array()}};
            bool complete = true, agent_failed = false;
            for (const WorkloadSpec* spec : specs) {
              SearchSummary s;
              try {
                s = beam_search(*spec, *proposer, *target, options, [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
              } catch (const ClusterJobsFailed& e) {
                fmt::print(stderr, "opbench search: {}\n", e.what());
                return 1;
              }
              print_search_summary(s);
              run["workloads"].push_back(s.to_json());
              complete = complete && !s.budget_stopped;
              agent_failed = agent_failed || s.no_successful_agent_call();
            }
            write_json_atomic(options.out_dir / "run.json", stamp_schema(run, kSearchRunSchema));
            fmt::print("\nwrote {}\n", (options.out_dir / "run.json").string());
            if (!complete) fmt::print("the search stopped at its --max-evals budget; the same command resumes it\n");
            if (agent_failed) {
              fmt::print(stderr, "error: the proposer never answered usefully in a search (see the failures above and log.jsonl); "
                                 "the run is marked so and not ranked on the leaderboard\n");
              return 1;
            }
            return 0;
          }};
}

}  // namespace opbench::cli
