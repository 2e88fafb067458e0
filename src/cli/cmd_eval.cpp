// opbench eval WORKLOAD KERNEL.cpp | --impl KIND: one result. Exit 0 when the kernel is correct, 1
// when it was evaluated and is not, 2 on a usage error, 3 when the harness failed (the baseline
// did not build or run, the --json file could not be written).
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/utf8.h"
#include "calibrate/roofline.h"
#include "harness/evaluate.h"
#include "report/reporter.h"
#include "report/scoreboard.h"
#include "search/tuner.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_eval(CLI::App& root) {
  auto* app = root.add_subcommand("eval", "Evaluate one kernel on one workload against its baseline");
  struct Options {
    std::string workload, kernel, impl, json_path, format = "console";
    SharedEvalFlags flags;
  };
  auto o = std::make_shared<Options>();
  app->add_option("workload", o->workload, "Workload id or unique prefix (e.g. 8p)")->required();
  app->add_option("kernel", o->kernel, "Kernel source implementing include/opbench/kernel.h");
  app->add_option("--impl", o->impl, "Evaluate a built-in implementation instead: reference, baseline or expert")
      ->check(CLI::IsMember({"reference", "baseline", "expert"}));
  app->add_option("--json", o->json_path, "Write the result as JSON to this file");
  add_shared_eval_flags(app, o->flags);
  add_format_flag(app, o->format);
  return {app, [o] {
            if (o->kernel.empty() == o->impl.empty())
              throw UsageError("give either a kernel source file or --impl reference|baseline|expert");
            Registry registry(Registry::default_root());
            const WorkloadSpec& spec = registry.find(o->workload);
            Implementation impl;
            if (!o->impl.empty()) {
              ResultStore store(ResultStore::default_path());
              std::string note;
              impl = tuned_builtin(spec, o->impl, resolve_size(o->flags.target, o->flags.size), o->flags.threads > 0 ? o->flags.threads : default_thread_count(), &store, &note, resolve_isa(o->flags.target, o->flags.isa), target_info(o->flags.target).source_extension);
              if (!note.empty()) fmt::print(stderr, "{} {}: {}\n", spec.id, o->impl, note);
            } else {
              if (!std::filesystem::is_regular_file(o->kernel))
                throw UsageError(fmt::format("kernel source '{}' not found; pass the path of a .cpp file that implements include/opbench/kernel.h", o->kernel));
              impl = Implementation{"candidate", o->kernel, {}};
            }
            auto target = make_target(o->flags.target);
            EvalOptions options = make_eval_options(o->flags);
            const auto profile = apply_machine_roofs(options, o->flags.target);
            options.progress = [](const std::string& s) { progress_line(s); };
            Result result = evaluate(spec, impl, *target, options);
            progress_done();
            if (profile) attach_roofline(result, *profile);
            if (o->format != "console") {
              ReportData data;
              data.results = {result};
              data.profile = profile;
              print_report(o->format, data);
            } else {
            fmt::print("{}", render_scoreboard({result}));
            if (result.status == Status::compile_error) fmt::print("\n{}\n", utf8_sanitize(result.build_log));
            if (!result.kernel_output.empty() && result.status != Status::correct)
              fmt::print("\nkernel output:\n{}\n", utf8_sanitize(result.kernel_output));
            if (result.timing) {
              fmt::print("\ncandidate {} calls in {} batches: median {} ms (worker clock {} ms, parent/worker {:.4f}), stop: {}\n",
                         result.timing->calls, result.timing->batches, result.timing->per_call_ms.median,
                         result.timing->worker_median_ms, result.timing->parent_over_worker, result.timing->stop_reason);
            }
            if (result.roofline && std::isfinite(result.roofline->fraction))
              fmt::print("roofline: {:.1f}% of the {}-bound roofline time of {:.4f} ms{}{}\n", 100 * result.roofline->fraction,
                         result.roofline->bound, result.roofline->roof_ms,
                         result.roofline->floor_ms < result.roofline->roof_ms * 0.999
                             ? fmt::format(" (floor for the least work any input needs: {:.4f} ms)", result.roofline->floor_ms)
                             : std::string(),
                         result.roofline->flags.empty() ? "" : " (BELOW THE FLOOR: the machine cannot do this work so fast)");
            }
            if (!o->json_path.empty()) {
              write_json_atomic(o->json_path, to_json(result));
            }
            return result.status == Status::correct ? 0 : 1;
          }};
}

}  // namespace opbench::cli
