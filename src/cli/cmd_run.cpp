// opbench run: many evaluations, with progress, a scoreboard table and JSON results on disk.
// Every workload the run attempts is recorded: an evaluation the harness could not finish (the
// baseline did not build or its worker died, a spec that does not load) is an entry with status
// harness_error. results.json is rewritten atomically after each evaluation, so a run that is
// killed keeps everything it finished. Exit 0: every entry correct; 1: some implementation was not
// correct; 3: some entry is a harness error (or the results could not be written).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>

#include <fmt/format.h>

#include "calibrate/roofline.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cluster/run_identity.h"
#include "cluster/shard.h"
#include "core/error.h"
#include "core/utf8.h"
#include "core/json_io.h"
#include "core/machine.h"
#include "harness/evaluate.h"
#include "report/reporter.h"
#include "report/scoreboard.h"
#include "search/tuner.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

namespace {

std::string default_out_dir() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return std::string("results/") + buffer;
}

// The entry of an evaluation the harness could not finish.
Result harness_error_result(const std::string& workload, const std::string& kind, const std::string& path, const EvalOptions& options,
                            const std::string& target, int threads, const std::string& why) {
  Result r;
  r.workload = workload;
  r.size = options.size;
  r.target = target;
  r.impl = ImplInfo{kind, path, ""};
  r.status = Status::harness_error;
  r.message = why;
  r.threads = threads;
  return r;
}

}  // namespace

void add_run_flags(CLI::App* app, RunFlags& f) {
  app->add_option("--workloads", f.workloads, "Comma-separated ids, prefixes or globs (default: all)");
  app->add_option("--impl", f.impls, "Comma-separated built-in implementations: reference, baseline, expert")->capture_default_str();
  app->add_option("--out", f.out, "Folder for the JSON results (default: results/<timestamp>)");
  app->add_option("--shard", f.shard, "Run only shard I of N (0 <= I < N) of the evaluations, e.g. 0/4; `opbench merge` joins the shards");
  add_shared_eval_flags(app, f.flags);
}

std::vector<RunJob> plan_run(const Registry& registry, const RunFlags& f, std::vector<std::string>* skipped) {
  auto workloads = registry.select(f.workloads);
  auto impls = split_list(f.impls);
  for (const auto& kind : impls)
    if (kind != "reference" && kind != "baseline" && kind != "expert")
      throw UsageError(fmt::format("unknown implementation '{}' in --impl (use reference, baseline, expert)", kind));
  std::vector<RunJob> jobs;
  for (const auto* w : workloads)
    for (const auto& kind : impls) {
      if (w->has_implementation(kind, target_info(f.flags.target).source_extension)) jobs.push_back({w, kind});
      else if (skipped) skipped->push_back(fmt::format("{} has no {}", w->id, kind));
    }
  // A shard is a set of positions in a canonical order: suite order, then implementation name,
  // whatever order the options named them in, so every shard of a run computes the same partition.
  // The run itself keeps the order the user asked for.
  auto position = [&](const WorkloadSpec* w) { return w - registry.all().data(); };
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(position(jobs[a].spec), jobs[a].kind) < std::pair(position(jobs[b].spec), jobs[b].kind);
  });
  for (size_t rank = 0; rank < order.size(); ++rank) jobs[order[rank]].canonical_position = rank;
  return jobs;
}

Command add_run(CLI::App& root) {
  auto* app = root.add_subcommand("run", "Evaluate implementations of many workloads and print a scoreboard");
  auto o = std::make_shared<RunFlags>();
  add_run_flags(app, *o);
  return {app, [o] {
            Registry registry(Registry::default_root());
            const Shard shard = o->shard.empty() ? Shard{} : parse_shard(o->shard);
            std::vector<std::string> skipped;
            std::vector<RunJob> all_jobs = plan_run(registry, *o, &skipped);
            auto impls = split_list(o->impls);
            auto target = make_target(o->flags.target);
            EvalOptions options = make_eval_options(o->flags);
            // A --set that one selected workload cannot take (no such symbol, a shape its input
            // generators cannot meet) is a usage error now, before anything runs or is written, not
            // after the workloads before it have run.
            if (!options.overrides.empty())
              for (const auto& job : all_jobs) resolve_workload(*job.spec, options.size, options.overrides, target->float_dtype());
            const std::filesystem::path out_dir = o->out.empty() ? default_out_dir() : o->out;
            std::error_code ec;
            std::filesystem::create_directories(out_dir, ec);
            if (ec) throw UsageError(fmt::format("--out {}: cannot create the folder: {}", out_dir.string(), ec.message()));

            using Job = RunJob;
            std::vector<Job> jobs;
            for (const auto& job : all_jobs)
              if (shard.contains(job.canonical_position)) jobs.push_back(job);
            if (!shard.whole())
              fmt::print(stderr, "opbench run: shard {} holds {} of the {} evaluations\n", shard.to_string(), jobs.size(), all_jobs.size());
            fmt::print(stderr, "opbench run: {} evaluations, size {}, {} thread(s), results in {}\n", jobs.size(), options.size,
                       options.threads > 0 ? options.threads : default_thread_count(), out_dir.string());
            std::unique_ptr<ResultStore> store;
            if (std::find(impls.begin(), impls.end(), "expert") != impls.end()) store = std::make_unique<ResultStore>(ResultStore::default_path());
            const int threads = options.threads > 0 ? options.threads : default_thread_count();
            const auto profile = apply_machine_roofs(options, o->flags.target);
            std::vector<Result> results;
            // Workloads whose spec does not load were attempted too: they are entries, not omissions.
            if (shard.whole())
              for (const BrokenWorkload* bw : registry.select_broken(o->workloads))
                for (const auto& kind : impls)
                  results.push_back(harness_error_result(bw->id, kind, (bw->dir / (kind + ".cpp")).string(), options, o->flags.target,
                                                         threads, "the workload's spec does not load: " + bw->reason));
            const size_t planned = jobs.size() + results.size();
            for (const auto& r : results) fmt::print(stderr, "{} {}: harness error: {}\n", r.workload, r.impl.kind, r.message);
            const auto start = std::chrono::steady_clock::now();
            const nlohmann::json machine = to_json(machine_info());
            // The whole run's document, rewritten after every evaluation (atomically: a reader or a
            // kill never sees half of it); "complete" turns true only at the end.
            auto write_run_document = [&](bool complete) {
              const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
              nlohmann::json all = stamp_schema({{"size", options.size},
                                                 {"target", o->flags.target},
                                                 {"isa_level", options.isa.empty() ? machine_isa_level() : options.isa},
                                                 {"seconds", seconds},
                                                 {"complete", complete},
                                                 {"planned", planned},
                                                 {"machine", machine},
                                                 {"machine_profile", profile ? to_json(*profile) : nlohmann::json(nullptr)},
                                                 {"summary", scoreboard_json(results)},
                                                 {"results", nlohmann::json::array()}},
                                                "opbench.run");
              for (const auto& r : results) all["results"].push_back(to_json(r));
              if (!shard.whole()) {
                // What this shard was given, so `opbench merge` can tell a complete set of shards.
                nlohmann::json names = nlohmann::json::array();
                for (const auto& job : jobs) names.push_back(evaluation_name(job.spec->id, job.kind));
                all["shard"] = {{"index", shard.index}, {"count", shard.count}, {"evaluations", names}};
              }
              write_json_atomic(out_dir / "results.json", all);
            };
            // Written before anything runs, so an --out that cannot be written fails now, not after an hour.
            write_run_document(false);
            ProgressBar bar(jobs.size());
            for (size_t i = 0; i < jobs.size(); ++i) {
              const Job& job = jobs[i];
              const std::string prefix = fmt::format("[{}/{}] {} {}", i + 1, jobs.size(), job.spec->id, job.kind);
              options.progress = [&](const std::string& s) { bar.note(prefix + ": " + s); };
              Result r;
              try {
                std::string note;
                Implementation impl = tuned_builtin(*job.spec, job.kind, options.size, threads, store.get(), &note, options.isa,
                                                    target_info(o->flags.target).source_extension);
                if (!note.empty()) {
                  bar.clear();
                  fmt::print(stderr, "{}: {}\n", prefix, note);
                }
                r = evaluate(*job.spec, impl, *target, options);
              } catch (const UsageError&) {
                throw;
              } catch (const std::exception& e) {
                // A harness-side failure on one workload must not lose it or the others: it is an entry.
                r = harness_error_result(job.spec->id, job.kind, job.spec->implementation(job.kind).string(), options, o->flags.target,
                                         threads, e.what());
              }
              if (profile && r.status != Status::harness_error) attach_roofline(r, *profile);
              if (r.status == Status::harness_error)
                bar.step_done(fmt::format("{}: harness error: {}", prefix, utf8_sanitize(r.message)));
              else
                bar.step_done(fmt::format("{}: {}{}{}", prefix, status_name(r.status),
                                          r.timing && r.speedup ? fmt::format(" {:.3f} ms, speedup {:.3f}", r.timing->per_call_ms.median, r.speedup->vs_baseline) : "",
                                          r.roofline && std::isfinite(r.roofline->fraction) ? fmt::format(", {:.0f}% of roofline", 100 * r.roofline->fraction) : ""));
              write_json_atomic(out_dir / fmt::format("{}.{}.json", r.workload, r.impl.kind), to_json(r));
              results.push_back(std::move(r));
              write_run_document(false);
            }
            bar.clear();
            write_run_document(true);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            fmt::print("{}", render_scoreboard(results));
            for (const auto& s : skipped) fmt::print("  skipped: {}\n", s);
            fmt::print("{} evaluations in {:.1f} s; JSON in {}\n", results.size(), seconds, (out_dir / "results.json").string());
            const auto count = [&](auto pred) { return std::count_if(results.begin(), results.end(), pred); };
            const auto harness_errors = count([](const Result& r) { return r.status == Status::harness_error; });
            if (harness_errors > 0) {
              fmt::print(stderr, "opbench run: {} of {} entries are harness errors (see their message)\n", harness_errors, results.size());
              return 3;
            }
            return count([](const Result& r) { return r.status != Status::correct; }) > 0 ? 1 : 0;
          }};
}

}  // namespace opbench::cli
