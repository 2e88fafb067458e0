// opbench tune WORKLOAD KERNEL.cpp | --impl expert: search the kernel's declared parameters, each
// point a full harness evaluation, results cached in SQLite.
#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/error.h"
#include "core/files.h"
#include "report/reporter.h"
#include "report/table.h"
#include "search/tuner.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_tune(CLI::App& root) {
  auto* app = root.add_subcommand("tune", "Search a kernel's declared parameters (// opbench:param NAME values...)");
  struct Options {
    std::string workload, kernel, impl, db;
    SharedEvalFlags flags;
    TuneOptions tune;
    int top = 10;
    std::string format = "console";
  };
  auto o = std::make_shared<Options>();
  app->add_option("workload", o->workload, "Workload id or unique prefix")->required();
  app->add_option("kernel", o->kernel, "Kernel source with `// opbench:param` declarations");
  app->add_option("--impl", o->impl, "Tune a built-in implementation instead (expert)")->check(CLI::IsMember({"expert", "baseline", "reference"}));
  app->add_option("--strategy", o->tune.strategy, "exhaustive, beam or random")->check(CLI::IsMember({"exhaustive", "beam", "random"}))->capture_default_str();
  app->add_option("--budget", o->tune.budget, "Most new measurements (0: no limit)")->check(CLI::Range(0, 1000000000))->capture_default_str();
  app->add_option("--time", o->tune.time_s, "Stop starting new measurements after this many seconds (0: no limit)")
      ->check(finite_number(0, kLongestSeconds, true))->capture_default_str();
  app->add_option("--beam-width", o->tune.beam_width, "Points kept per beam step")->check(CLI::Range(1, 1000000))->capture_default_str();
  app->add_option("--seed", o->tune.random_seed, "Order of the random strategy")->check(seed_value())->capture_default_str();
  app->add_option("--db", o->db, "SQLite result store (default: $OPBENCH_DB or ~/.cache/opbench/opbench.sqlite)");
  app->add_option("--top", o->top, "Rows of the final table")->check(CLI::Range(0, 1000000000))->capture_default_str();
  add_shared_eval_flags(app, o->flags);
  add_format_flag(app, o->format);
  return {app, [o] {
            if (o->kernel.empty() == o->impl.empty()) throw UsageError("give either a kernel source file or --impl expert");
            Registry registry(Registry::default_root());
            const WorkloadSpec& spec = registry.find(o->workload);
            Implementation kernel;
            if (!o->impl.empty()) {
              kernel = builtin_implementation(spec, o->impl);
            } else {
              if (!std::filesystem::is_regular_file(o->kernel)) throw UsageError(fmt::format("kernel source '{}' not found", o->kernel));
              kernel = Implementation{"candidate", o->kernel, {}};
            }
            auto target = make_target(o->flags.target);
            ResultStore store(o->db.empty() ? ResultStore::default_path() : std::filesystem::path(o->db));
            TuneOptions options = o->tune;
            options.eval = make_eval_options(o->flags);
            // The machine's roofs, as eval and run use them: without them no tuned point is held
            // against the roofline floor, and an impossibly fast one would be stored as the winner.
            apply_machine_roofs(options.eval, o->flags.target);
            const double space = space_size(parse_tunable_params(read_file(kernel.source)));
            const size_t planned = o->tune.budget > 0 ? size_t(o->tune.budget) : size_t(space);
            fmt::print(stderr, "tuning {} on {} ({} size), {} points in the space, strategy {}\n", kernel.source.string(), spec.id,
                       options.eval.size, space, options.strategy);
            ProgressBar bar(planned);
            auto on_point = [&](const TunedPoint& t, const TuneOutcome& so_far) {
              auto best = so_far.best();
              std::string line = fmt::format("{} measured, {} cached | {} {}: {}{} | best {}",
                                             so_far.measured, so_far.cached, t.cached ? "cached" : "measured",
                                             describe_point(t.point), status_name(t.result.status),
                                             t.result.status == Status::correct ? fmt::format(" {:.3f}x", t.result.speedup) : "",
                                             best ? fmt::format("{:.3f}x", best->result.speedup) : "-");
              // Cached points cost nothing: only measured ones advance the bar and its estimate.
              if (t.cached) bar.note(line);
              else bar.step_done(line);
            };
            TuneOutcome out = tune(spec, kernel, *target, store, options, on_point);
            bar.clear();
            std::vector<const TunedPoint*> ranked;
            for (const auto& v : out.visited) ranked.push_back(&v);
            std::stable_sort(ranked.begin(), ranked.end(), [](auto* a, auto* b) {
              bool ca = a->result.status == Status::correct, cb = b->result.status == Status::correct;
              return ca != cb ? ca : a->result.speedup > b->result.speedup;
            });
            if (o->format != "console") {
              ReportTable points;
              points.title = fmt::format("tune {} on {}", kernel.source.string(), spec.id);
              points.columns = {"rank", "parameters", "status", "median ms", "speedup", "ci95 low", "ci95 high", "source"};
              for (size_t i = 0; i < ranked.size(); ++i) {
                const auto& r = ranked[i]->result;
                const bool ok = r.status == Status::correct;
                auto num = [ok](double v) { return ok ? nlohmann::json(v) : nlohmann::json(nullptr); };
                points.rows.push_back({i + 1, describe_point(ranked[i]->point), std::string(status_name(r.status)), num(r.median_ms),
                                       num(r.speedup), num(r.ci95_low), num(r.ci95_high), ranked[i]->cached ? "cached" : "measured"});
              }
              points.notes.push_back(fmt::format("{} points visited: {} measured, {} from the store; stopped: {}", out.visited.size(),
                                                 out.measured, out.cached, out.stop_reason));
              ReportData data;
              data.title = points.title;
              data.tables.push_back(std::move(points));
              print_report(o->format, data);
              return out.best() ? 0 : 1;
            }
            TextTable table({"rank", "parameters", "status", "median ms", "speedup", "95% CI", "source"});
            for (size_t i = 0; i < ranked.size() && i < size_t(o->top); ++i) {
              const auto& r = ranked[i]->result;
              const bool ok = r.status == Status::correct;
              table.add_row({std::to_string(i + 1), describe_point(ranked[i]->point), std::string(status_name(r.status)),
                             ok ? format_ms(r.median_ms) : "-", ok ? fmt::format("{:.3f}", r.speedup) : "-",
                             ok ? fmt::format("[{:.3f}, {:.3f}]", r.ci95_low, r.ci95_high) : "-", ranked[i]->cached ? "cached" : "measured"});
            }
            fmt::print("{}\n{} points visited: {} measured now, {} from the store; stopped: {}; {:.1f} s\n", table.render(),
                       out.visited.size(), out.measured, out.cached, out.stop_reason, out.seconds);
            if (auto best = out.best()) fmt::print("best: {} ({:.3f}x the baseline)\n", describe_point(best->point), best->result.speedup);
            return out.best() ? 0 : 1;
          }};
}

}  // namespace opbench::cli
