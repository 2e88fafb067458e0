// opbench build WORKLOADS --target T --impl baseline,expert [--jobs N]: build (and vet) the built-in
// implementations of a target without running them. On the cuda target this needs only nvcc, so
// machines without a GPU (CI) check that every .cu file compiles and passes the import check; on a
// GPU machine it fills the kernel cache in parallel before a run.
#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "harness/evaluate.h"
#include "report/table.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_build(CLI::App& root) {
  auto* app = root.add_subcommand("build", "Build and vet implementations without running them (cuda: works without a GPU)");
  struct Options {
    std::string workloads = "all", impls = "baseline,expert", target = "cpu", size, kernel;
    int jobs = 0;
  };
  auto o = std::make_shared<Options>();
  app->add_option("--workloads", o->workloads, "Comma-separated ids, prefixes or globs")->capture_default_str();
  app->add_option("--impl", o->impls, "Implementations: baseline, expert (comma-separated)")->capture_default_str();
  add_target_flags(app, o->target, o->size, "Unused (kept for symmetry with run)");
  app->add_option("--jobs", o->jobs, "Builds at once (default: the usable CPUs)")->check(CLI::Range(1, 1024));
  app->add_option("--kernel", o->kernel, "Build and vet this candidate file instead (for the one workload --workloads names)");
  return {app, [o] {
            Registry registry(Registry::default_root());
            auto target = make_build_target(o->target);
            struct Job {
              const WorkloadSpec* spec;
              std::string kind;
              std::string status, detail;
              double seconds = 0;
              bool cached = false;
            };
            std::vector<Job> jobs;
            if (!o->kernel.empty()) {
              const auto selected = registry.select(o->workloads);
              if (selected.size() != 1) throw UsageError("--kernel needs exactly one workload in --workloads");
              if (!std::filesystem::is_regular_file(o->kernel)) throw UsageError(fmt::format("--kernel {}: no such file", o->kernel));
              jobs.push_back({selected.front(), "candidate", "", "", 0, false});
            }
            for (const auto* w : o->kernel.empty() ? registry.select(o->workloads) : std::vector<const WorkloadSpec*>{})
              for (const auto& kind : split_list(o->impls)) {
                if (kind != "baseline" && kind != "expert") throw UsageError(fmt::format("--impl {}: use baseline or expert", kind));
                if (w->has_implementation(kind, target->source_extension())) jobs.push_back({w, kind, "", "", 0, false});
              }
            if (jobs.empty()) throw UsageError(fmt::format("no {} implementation of the selected workloads exists", target->source_extension()));
            std::atomic<size_t> next{0};
            std::mutex print;
            auto work = [&] {
              for (size_t i; (i = next++) < jobs.size();) {
                Job& j = jobs[i];
                const Implementation impl = j.kind == "candidate" ? Implementation{"candidate", o->kernel, {}}
                                                                  : builtin_implementation(*j.spec, j.kind, target->source_extension());
                try {
                  const BuildOutcome b = target->build({impl.source, impl.kind, impl.trusted(), impl.defines, {}});
                  j.seconds = b.seconds;
                  j.cached = b.cached;
                  if (!b.ok) {
                    j.status = "compile_error";
                    j.detail = b.log;
                  } else if (std::string refusal = impl.trusted() ? std::string() : target->vet(b); !refusal.empty()) {
                    j.status = "rejected";
                    j.detail = refusal;
                  } else {
                    j.status = "ok";
                  }
                } catch (const std::exception& e) {
                  j.status = "harness_error";
                  j.detail = e.what();
                }
                std::lock_guard lock(print);
                progress_line(fmt::format("built {} {}: {}", j.spec->id, j.kind, j.status));
              }
            };
            const int n = o->jobs > 0 ? o->jobs : default_thread_count();
            std::vector<std::thread> pool;
            for (int t = 0; t < std::min<int>(n, int(jobs.size())); ++t) pool.emplace_back(work);
            for (auto& t : pool) t.join();
            progress_done();
            TextTable table({"workload", "impl", "status", "seconds"});
            size_t failed = 0;
            for (const Job& j : jobs) {
              table.add_row({j.spec->id, j.kind, j.status, j.cached ? "cached" : fmt::format("{:.1f}", j.seconds)});
              failed += j.status != "ok";
            }
            fmt::print("{}", table.render());
            for (const Job& j : jobs)
              if (j.status != "ok") fmt::print("\n{} {} ({}):\n{}\n", j.spec->id, j.kind, j.status, j.detail.substr(0, 4000));
            fmt::print("\n{} of {} built on target {}\n", jobs.size() - failed, jobs.size(), target->name());
            return failed ? 1 : 0;
          }};
}

}  // namespace opbench::cli
