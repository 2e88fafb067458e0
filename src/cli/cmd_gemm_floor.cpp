// opbench gemm-floor: a benchmark of each GEMM-dominated baseline against the bare library GEMMs
// it performs (OpenBLAS and oneDNN, each measured in the same run; the faster is the floor), at the
// same shapes and instruction-set level, side by side.
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "harness/evaluate.h"
#include "harness/gemm_floor.h"
#include "report/table.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_gemm_floor(CLI::App& root) {
  auto* app = root.add_subcommand("gemm-floor", "Time each GEMM-dominated baseline against its bare library GEMMs (OpenBLAS and oneDNN)");
  struct Options {
    std::string workloads = "all", size, target, isa;
    int threads = 0;
    double max_time = 5;
    double limit = 1.25;
  };
  auto o = std::make_shared<Options>();
  app->add_option("--workloads", o->workloads, "Comma-separated ids, prefixes or globs (default: all that declare [[gemms]])");
  add_target_flags(app, o->target, o->size, "Size class");
  app->add_option("--isa", o->isa, "Instruction-set level (cpu: x86-64-v3, x86-64-v4, native; default: the host's highest named level)");
  app->add_option("--threads", o->threads, "Threads, at most the usable CPUs (default: all of them)")->check(thread_count());
  app->add_option("--max-time", o->max_time, "Time cap per workload and library, seconds")->check(finite_number(0, kLongestSeconds))->capture_default_str();
  app->add_option("--limit", o->limit, "Largest acceptable baseline/GEMM ratio (against the faster library)")->check(finite_number(0, 1e6))->capture_default_str();
  return {app, [o] {
            Registry registry(Registry::default_root());
            o->size = resolve_size(o->target, o->size);
            const std::string isa = resolve_isa(o->target, o->isa);
            auto target = make_target(o->target);
            TimingOptions timing;
            timing.max_seconds = o->max_time;
            timing.min_seconds = std::min(timing.min_seconds, o->max_time);
            const int threads = o->threads > 0 ? o->threads : default_thread_count();
            TextTable table({"workload", "GEMMs", "GEMM share of FLOPs", "baseline ms", "openblas ms", "onednn ms", "floor",
                             "baseline/floor", "95% CI", "verdict"});
            int over = 0, measured = 0;
            for (const WorkloadSpec* spec : registry.select(o->workloads)) {
              if (spec->gemms.empty()) continue;
              progress_line(fmt::format("{}: timing baseline and bare GEMMs", spec->id));
              GemmFloor f = measure_gemm_floor(*spec, o->size, *target, threads, timing, isa);
              progress_done();
              ++measured;
              const bool ok = f.ratio <= o->limit;
              if (!ok) ++over;
              std::vector<std::string> row{f.workload, std::to_string(f.gemm_count), fmt::format("{:.0f}%", 100 * f.gemm_flops / f.workload_flops),
                                           format_ms(f.baseline_ms)};
              for (GemmLibrary library : {GemmLibrary::openblas, GemmLibrary::onednn}) {
                std::string cell = "-";
                for (const auto& t : f.libraries)
                  if (t.library == library) cell = format_ms(t.bare_ms);
                row.push_back(cell);
              }
              row.insert(row.end(), {gemm_library_name(f.best), fmt::format("{:.3f}", f.ratio), fmt::format("[{:.3f}, {:.3f}]", f.ci95_low, f.ci95_high),
                                     ok ? "ok" : fmt::format("over {:g}x", o->limit)});
              table.add_row(row);
              for (const auto& t : f.libraries)
                fmt::print(stderr, "{}: baseline {:.3f} ms, bare {} GEMMs {:.3f} ms, ratio {:.3f} [{:.3f}, {:.3f}], {} pairs\n", f.workload,
                           t.baseline_ms, gemm_library_name(t.library), t.bare_ms, t.ratio, t.ci95_low, t.ci95_high, t.pairs);
            }
            if (measured == 0) throw UsageError("no selected workload declares [[gemms]]");
            fmt::print("{}\nsize {}, instruction set {}, {} thread(s); baseline/floor = paired geomean of baseline time / bare GEMM time of "
                       "the faster library (each library paired with the baseline in this run); {} of {} over {:g}x\n",
                       table.render(), o->size, isa.empty() ? "-" : isa, threads, over, measured, o->limit);
            return over == 0 ? 0 : 1;
          }};
}

}  // namespace opbench::cli
