// opbench run: many evaluations, with progress, a scoreboard table and JSON results on disk.
// Every workload the run attempts is recorded: an evaluation the harness could not finish (the
// baseline did not build or its worker died, a spec that does not load) is an entry with status
// harness_error. results.json is rewritten atomically after each evaluation, so a run that is
// killed keeps everything it finished. Exit 0: every entry correct; 1: some implementation was not
// correct; 3: some entry is a harness error (or the results could not be written).
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/utf8.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/machine.h"
#include "harness/evaluate.h"
#include "report/scoreboard.h"
#include "search/tuner.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {
namespace {

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

Command add_run(CLI::App& root) {
  auto* app = root.add_subcommand("run", "Evaluate implementations of many workloads and print a scoreboard");
  struct Options {
    std::string workloads = "all", impls = "baseline", out;
    SharedEvalFlags flags;
  };
  auto o = std::make_shared<Options>();
  app->add_option("--workloads", o->workloads, "Comma-separated ids, prefixes or globs (default: all)");
  app->add_option("--impl", o->impls, "Comma-separated built-in implementations: reference, baseline, expert")->capture_default_str();
  app->add_option("--out", o->out, "Folder for the JSON results (default: results/<timestamp>)");
  add_shared_eval_flags(app, o->flags);
  return {app, [o] {
            Registry registry(Registry::default_root());
            auto workloads = registry.select(o->workloads);
            auto impls = split_list(o->impls);
            for (const auto& kind : impls)
              if (kind != "reference" && kind != "baseline" && kind != "expert")
                throw UsageError(fmt::format("unknown implementation '{}' in --impl (use reference, baseline, expert)", kind));
            const std::filesystem::path out_dir = o->out.empty() ? default_out_dir() : o->out;
            std::error_code ec;
            std::filesystem::create_directories(out_dir, ec);
            if (ec) throw UsageError(fmt::format("--out {}: cannot create the folder: {}", out_dir.string(), ec.message()));
            auto target = make_target(o->flags.target);
            EvalOptions options = make_eval_options(o->flags);

            struct Job {
              const WorkloadSpec* spec;
              std::string kind;
            };
            std::vector<Job> jobs;
            std::vector<std::string> skipped;
            for (const auto* w : workloads)
              for (const auto& kind : impls) {
                if (w->has_implementation(kind)) jobs.push_back({w, kind});
                else skipped.push_back(fmt::format("{} has no {}", w->id, kind));
              }
            const int threads = options.threads > 0 ? options.threads : default_thread_count();
            std::vector<Result> results;
            // Workloads whose spec does not load were attempted too: they are entries, not omissions.
            for (const BrokenWorkload* b : registry.select_broken(o->workloads))
              for (const auto& kind : impls)
                results.push_back(harness_error_result(b->id, kind, (b->dir / (kind + ".cpp")).string(), options, o->flags.target, threads,
                                                       "the workload's spec does not load: " + b->reason));
            const size_t planned = jobs.size() + results.size();  // every entry the finished run will have
            fmt::print(stderr, "opbench run: {} evaluations, size {}, {} thread(s), results in {}\n", jobs.size(), options.size, threads,
                       out_dir.string());
            for (const auto& r : results) fmt::print(stderr, "{} {}: harness error: {}\n", r.workload, r.impl.kind, r.message);
            std::unique_ptr<ResultStore> store;
            if (std::find(impls.begin(), impls.end(), "expert") != impls.end()) store = std::make_unique<ResultStore>(ResultStore::default_path());
            const auto start = std::chrono::steady_clock::now();
            const nlohmann::json machine = to_json(machine_info());
            // The whole run's document, rewritten after every evaluation (atomically: a reader or a
            // kill never sees half of it); "complete" turns true only at the end.
            auto write_run_document = [&](bool complete) {
              const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
              nlohmann::json all = stamp_schema({{"size", options.size},
                                                 {"target", o->flags.target},
                                                 {"seconds", seconds},
                                                 {"complete", complete},
                                                 {"planned", planned},
                                                 {"machine", machine},
                                                 {"summary", scoreboard_json(results)},
                                                 {"results", nlohmann::json::array()}},
                                                "opbench.run");
              for (const auto& r : results) all["results"].push_back(to_json(r));
              write_json_atomic(out_dir / "results.json", all);
            };
            // Written before anything runs, so an --out that cannot be written fails now, not after an hour.
            write_run_document(false);
            for (size_t i = 0; i < jobs.size(); ++i) {
              const Job& job = jobs[i];
              const std::string prefix = fmt::format("[{}/{}] {} {}", i + 1, jobs.size(), job.spec->id, job.kind);
              options.progress = [&](const std::string& s) { progress_line(prefix + ": " + s); };
              Result r;
              try {
                std::string note;
                Implementation impl = tuned_builtin(*job.spec, job.kind, options.size, threads, store.get(), &note);
                if (!note.empty()) fmt::print(stderr, "{}: {}\n", prefix, note);
                r = evaluate(*job.spec, impl, *target, options);
              } catch (const UsageError&) {
                throw;
              } catch (const std::exception& e) {
                // A harness-side failure on one workload must not lose it or the others: it is an entry.
                progress_done();
                r = harness_error_result(job.spec->id, job.kind, job.spec->implementation(job.kind).string(), options, o->flags.target,
                                         threads, e.what());
              }
              progress_done();
              if (r.status == Status::harness_error)
                fmt::print(stderr, "{}: harness error: {}\n", prefix, utf8_sanitize(r.message));
              else
                fmt::print(stderr, "{}: {}{}\n", prefix, status_name(r.status),
                           r.timing && r.speedup ? fmt::format(" {:.3f} ms, speedup {:.3f}", r.timing->per_call_ms.median, r.speedup->vs_baseline) : "");
              write_json_atomic(out_dir / fmt::format("{}.{}.json", r.workload, r.impl.kind), to_json(r));
              results.push_back(std::move(r));
              write_run_document(false);
            }
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
