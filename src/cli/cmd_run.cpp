// opbench run: many evaluations, with progress, a scoreboard table and JSON results on disk.
#include <chrono>
#include <ctime>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.h"
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
            std::filesystem::create_directories(out_dir);
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
            fmt::print(stderr, "opbench run: {} evaluations, size {}, {} thread(s), results in {}\n", jobs.size(), options.size,
                       options.threads > 0 ? options.threads : default_thread_count(), out_dir.string());
            std::unique_ptr<ResultStore> store;
            if (std::find(impls.begin(), impls.end(), "expert") != impls.end()) store = std::make_unique<ResultStore>(ResultStore::default_path());
            const int threads = options.threads > 0 ? options.threads : default_thread_count();
            std::vector<Result> results;
            const auto start = std::chrono::steady_clock::now();
            for (size_t i = 0; i < jobs.size(); ++i) {
              const Job& job = jobs[i];
              const std::string prefix = fmt::format("[{}/{}] {} {}", i + 1, jobs.size(), job.spec->id, job.kind);
              options.progress = [&](const std::string& s) { progress_line(prefix + ": " + s); };
              Result r;
              try {
                std::string note;
                Implementation impl = tuned_builtin(*job.spec, job.kind, options.size, threads, store.get(), &note, options.isa);
                if (!note.empty()) fmt::print(stderr, "{}: {}\n", prefix, note);
                r = evaluate(*job.spec, impl, *target, options);
              } catch (const UsageError&) {
                throw;
              } catch (const std::exception& e) {
                // A harness-side failure on one workload must not lose the others.
                progress_done();
                fmt::print(stderr, "{}: harness error: {}\n", prefix, e.what());
                continue;
              }
              progress_done();
              fmt::print(stderr, "{}: {}{}\n", prefix, status_name(r.status),
                         r.timing ? fmt::format(" {:.3f} ms, speedup {:.3f}", r.timing->per_call_ms.median, r.speedup->vs_baseline) : "");
              write_json_atomic(out_dir / fmt::format("{}.{}.json", r.workload, r.impl.kind), to_json(r));
              results.push_back(std::move(r));
            }
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            nlohmann::json all = stamp_schema({{"size", options.size},
                                  {"target", o->flags.target},
                                  {"seconds", seconds},
                                  {"machine", to_json(machine_info())},
                                  {"summary", scoreboard_json(results)},
                                  {"results", nlohmann::json::array()}}, "opbench.run");
            for (const auto& r : results) all["results"].push_back(to_json(r));
            write_json_atomic(out_dir / "results.json", all);
            fmt::print("{}", render_scoreboard(results));
            for (const auto& s : skipped) fmt::print("  skipped: {}\n", s);
            fmt::print("{} evaluations in {:.1f} s; JSON in {}\n", results.size(), seconds, (out_dir / "results.json").string());
            return results.size() == jobs.size() ? 0 : 1;
          }};
}

}  // namespace opbench::cli
