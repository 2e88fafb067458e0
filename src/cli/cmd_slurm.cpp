// opbench slurm run [RUN OPTIONS] [SLURM OPTIONS]: a run split into shards, one Slurm array task
// each; submitted with sbatch, followed with squeue/sacct, merged when done, resumable.
#include <set>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/slurm_flags.h"
#include "cluster/slurm_run.h"
#include "core/error.h"
#include "harness/evaluate.h"
#include "workload/registry.h"

namespace opbench::cli {
void add_slurm_flags(CLI::App* app, SlurmFlags& f, std::set<const CLI::Option*>* added) {
  auto mark = [&](CLI::Option* opt) {
    opt->group("Slurm");
    added->insert(opt);
  };
  auto& s = f.settings;
  mark(app->add_option("--cpus-per-task", s.cpus_per_task, "CPUs of each task; also its --threads unless given")
           ->check(CLI::PositiveNumber)->capture_default_str());
  mark(app->add_option("--gpus", s.gpus, "GPUs of each task (sbatch --gpus-per-task), e.g. 1 or a100:1"));
  mark(app->add_option("--partition", s.partition, "Slurm partition (default: the cluster's)"));
  mark(app->add_option("--time", s.time, "Time limit of each task, e.g. 30:00 (default: the partition's)"));
  mark(app->add_option("--account", s.account, "Account to charge (default: yours)"));
  mark(app->add_flag("--exclusive", s.exclusive, "Whole nodes: nothing else runs beside a timing (recommended for timing-grade results)"));
  mark(app->add_option("--sbatch-arg", s.extra, "Another sbatch option, e.g. --sbatch-arg=--qos=high (repeatable)"));
  mark(app->add_option("--poll", f.poll_seconds, "Seconds between squeue polls")->check(CLI::PositiveNumber)->capture_default_str());
  mark(app->add_option("--retries", f.retries, "Resubmissions of tasks that ended without results before giving up")
           ->check(CLI::NonNegativeNumber)->capture_default_str());
}

std::vector<std::string> given_options_as_args(const CLI::App* app, const std::function<bool(const CLI::Option*)>& pick) {
  std::vector<std::string> args;
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty() || !pick(opt)) continue;
    const std::string name = "--" + opt->get_lnames().front();
    if (opt->get_type_size_max() == 0) {  // a flag
      args.push_back(name);
      continue;
    }
    for (const auto& value : opt->results()) args.insert(args.end(), {name, value});
  }
  return args;
}

std::set<std::string> shared_eval_option_names() {
  CLI::App scratch;
  SharedEvalFlags flags;
  add_shared_eval_flags(&scratch, flags);
  std::set<std::string> names;
  for (const CLI::Option* opt : scratch.get_options())
    for (const auto& l : opt->get_lnames()) names.insert("--" + l);
  return names;
}

BatchEvaluator slurm_search_evaluator(const CLI::App* search, const SlurmFlags& flags, const std::filesystem::path& out) {
  SlurmEvaluatorOptions o;
  o.dir = std::filesystem::absolute(out / "slurm").lexically_normal();
  o.opbench = std::filesystem::canonical("/proc/self/exe");
  const std::set<std::string> eval_names = shared_eval_option_names();
  o.eval_args = given_options_as_args(search, [&](const CLI::Option* opt) {
    for (const auto& l : opt->get_lnames())
      if (eval_names.count("--" + l)) return true;
    return false;
  });
  if (search->get_option("--threads")->count() == 0) o.eval_args.insert(o.eval_args.end(), {"--threads", std::to_string(flags.settings.cpus_per_task)});
  o.settings = flags.settings;
  o.poll_seconds = flags.poll_seconds;
  o.retries = flags.retries;
  o.progress = [](const std::string& line) { fmt::print(stderr, "opbench slurm: {}\n", line); };
  return slurm_evaluator(std::move(o));
}

Command add_slurm(CLI::App& root) {
  auto* slurm = root.add_subcommand("slurm", "Run on a Slurm cluster: shards as array jobs, merged when done");
  slurm->require_subcommand(1);
  auto* app = slurm->add_subcommand("run", "`opbench run` split into shards, one Slurm array task each; the same command resumes it");
  struct Options {
    RunFlags run;
    SlurmFlags slurm;
    SlurmRunRequest request;
    int shards = 0;
    bool no_wait = false;
  };
  auto o = std::make_shared<Options>();
  add_run_flags(app, o->run);
  std::set<const CLI::Option*> own;
  add_slurm_flags(app, o->slurm, &own);
  auto mark = [&](CLI::Option* opt) {
    opt->group("Slurm");
    own.insert(opt);
  };
  mark(app->add_option("--shards", o->shards, "Shards (array tasks) to split the evaluations into (default: one per evaluation)")
           ->check(CLI::PositiveNumber));
  mark(app->add_flag("--dry-run", o->request.dry_run, "Print the sbatch script of the shards to run; submit nothing"));
  mark(app->add_flag("--no-wait", o->no_wait, "Submit and return; the same command later follows and merges"));
  mark(app->add_flag("--allow-mixed", o->request.merge.allow_mixed, "Merge shards measured on different kinds of node"));
  for (const char* name : {"--out", "--shard"}) own.insert(app->get_option(name));
  own.insert(app->get_help_ptr());
  return {slurm, [o, app, own] {
            if (!o->run.shard.empty()) throw UsageError("slurm run makes the shards itself: give --shards N, not --shard");
            Registry registry(Registry::default_root());
            std::vector<std::string> skipped;
            const size_t evaluations = plan_run(registry, o->run, &skipped).size();
            make_eval_options(o->run.flags);  // refuses a bad size or --set here, not on every node
            if (evaluations == 0) throw UsageError("no evaluations selected");
            SlurmRunRequest r = o->request;
            r.settings = o->slurm.settings;
            r.poll_seconds = o->slurm.poll_seconds;
            r.retries = o->slurm.retries;
            r.shards = o->shards > 0 ? o->shards : int(std::min<size_t>(evaluations, 1000));
            if (size_t(r.shards) > evaluations)
              throw UsageError(fmt::format("--shards {} for {} evaluations would leave shards empty", r.shards, evaluations));
            r.out = o->run.out.empty() ? std::filesystem::path("results/slurm") : std::filesystem::path(o->run.out);
            r.out = std::filesystem::absolute(r.out).lexically_normal();
            r.opbench = std::filesystem::canonical("/proc/self/exe");
            r.run_args = given_options_as_args(app, [&](const CLI::Option* opt) { return !own.count(opt); });
            if (app->get_option("--threads")->count() == 0) r.run_args.insert(r.run_args.end(), {"--threads", std::to_string(r.settings.cpus_per_task)});
            r.wait = !o->no_wait;
            if (!r.dry_run) std::filesystem::create_directories(r.out);
            return slurm_run(r, [](const std::string& line) { fmt::print(stderr, "opbench slurm: {}\n", line); });
          }};
}

}  // namespace opbench::cli
