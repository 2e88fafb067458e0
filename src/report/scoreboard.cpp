#include "report/scoreboard.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "report/table.h"

namespace opbench {

ScoreboardSummary summarize_results(const std::vector<Result>& results) {
  for (const auto& r : results)
    if (r.isa != results.front().isa)
      throw std::invalid_argument(fmt::format("results at instruction-set levels {} and {} cannot be summarized together",
                                              results.front().isa, r.isa));
  ScoreboardSummary s;
  s.results = results.size();
  double log_correct = 0, log_all = 0;
  s.fast_p.assign(s.fast_p_thresholds.size(), 0);
  for (const auto& r : results) {
    const bool timed = r.status == Status::correct && r.speedup && r.speedup->vs_baseline > 0;
    if (r.status == Status::correct) ++s.correct;
    if (timed) {
      log_correct += std::log(r.speedup->vs_baseline);
      log_all += std::log(r.speedup->vs_baseline);
      for (size_t i = 0; i < s.fast_p_thresholds.size(); ++i)
        if (r.speedup->vs_baseline > s.fast_p_thresholds[i]) s.fast_p[i] += 1;
    }
  }
  size_t timed_count = 0;
  for (const auto& r : results)
    if (r.status == Status::correct && r.speedup && r.speedup->vs_baseline > 0) ++timed_count;
  s.geomean_correct_only = timed_count ? std::exp(log_correct / double(timed_count)) : NAN;
  s.geomean_failures_as_one = s.results ? std::exp(log_all / double(s.results)) : NAN;
  for (auto& f : s.fast_p) f = s.results ? f / double(s.results) : 0;
  return s;
}

namespace {

// The instruction-set levels present, in order of first appearance.
std::vector<std::string> isa_levels_of(const std::vector<Result>& results) {
  std::vector<std::string> levels;
  for (const auto& r : results)
    if (std::find(levels.begin(), levels.end(), r.isa) == levels.end()) levels.push_back(r.isa);
  return levels;
}

std::vector<Result> at_level(const std::vector<Result>& results, const std::string& isa) {
  std::vector<Result> out;
  for (const auto& r : results)
    if (r.isa == isa) out.push_back(r);
  return out;
}

}  // namespace

// Speedups at different instruction-set levels are over different baselines: each level gets its
// own table and summary, never one ranking.
std::string render_scoreboard(const std::vector<Result>& results) {
  const std::vector<std::string> levels = isa_levels_of(results);
  if (levels.size() > 1) {
    std::string out;
    for (const auto& isa : levels)
      out += fmt::format("== instruction set {} ==\n{}\n", isa.empty() ? "(none)" : isa, render_scoreboard(at_level(results, isa)));
    return out;
  }
  TextTable table({"workload", "impl", "status", "median ms", "±%", "baseline ms", "speedup", "95% CI", "GFLOP/s", "GB/s", "FLOP/B"});
  for (const auto& r : results) {
    std::vector<std::string> row{r.workload, r.impl.kind, std::string(status_name(r.status))};
    if (r.timing && r.speedup) {
      const auto& t = *r.timing;
      row.push_back(format_ms(t.per_call_ms.median));
      row.push_back(t.per_call_ms.median > 0 ? fmt::format("{:.1f}", 100 * t.per_call_ms.stdev / t.per_call_ms.median) : "-");
      row.push_back(format_ms(t.baseline_per_call_ms.median));
      row.push_back(fmt::format("{:.3f}", r.speedup->vs_baseline));
      row.push_back(fmt::format("[{:.3f}, {:.3f}]", r.speedup->ci95_low, r.speedup->ci95_high));
      row.push_back(format_rate(r.work.gflops_per_s));
      row.push_back(format_rate(r.work.gbytes_per_s));
    } else {
      row.insert(row.end(), {"-", "-", "-", "-", "-", "-", "-"});
    }
    row.push_back(format_rate(r.work.intensity));
    table.add_row(row);
  }
  ScoreboardSummary s = summarize_results(results);
  std::string out = table.render();
  if (!levels.empty() && !levels.front().empty()) out += fmt::format("instruction set: {}\n", levels.front());
  out += fmt::format("\n{} of {} correct.  geomean speedup: {:.3f} over correct results, {:.3f} with failures as 1.0\n",
                     s.correct, s.results, s.geomean_correct_only, s.geomean_failures_as_one);
  std::string fast;
  for (size_t i = 0; i < s.fast_p.size(); ++i) fast += fmt::format("  fast_{:g} {:.2f}", s.fast_p_thresholds[i], s.fast_p[i]);
  out += "fast_p:" + fast + "\n";
  // With several implementation kinds in one run, each kind's own summary (experts against the
  // baseline, say) is what a reader wants, not the mix.
  std::vector<std::string> kinds;
  for (const auto& r : results)
    if (std::find(kinds.begin(), kinds.end(), r.impl.kind) == kinds.end()) kinds.push_back(r.impl.kind);
  if (kinds.size() > 1) {
    for (const auto& kind : kinds) {
      std::vector<Result> of_kind;
      for (const auto& r : results)
        if (r.impl.kind == kind) of_kind.push_back(r);
      ScoreboardSummary k = summarize_results(of_kind);
      out += fmt::format("  {}: {} of {} correct, geomean speedup {:.3f} (failures as 1.0: {:.3f})\n", kind, k.correct,
                         k.results, k.geomean_correct_only, k.geomean_failures_as_one);
    }
  }
  for (const auto& r : results)
    if (r.status != Status::correct) out += fmt::format("  {} {}: {}: {}\n", r.workload, r.impl.kind, status_name(r.status), r.message);
  return out;
}

nlohmann::json scoreboard_json(const std::vector<Result>& results) {
  const std::vector<std::string> levels = isa_levels_of(results);
  if (levels.size() > 1) {  // one summary per level, none over all
    nlohmann::json per_level = nlohmann::json::object();
    for (const auto& isa : levels) per_level[isa] = scoreboard_json(at_level(results, isa));
    return {{"by_isa", per_level}};
  }
  ScoreboardSummary s = summarize_results(results);
  nlohmann::json fast = nlohmann::json::object();
  for (size_t i = 0; i < s.fast_p.size(); ++i) fast[fmt::format("{:g}", s.fast_p_thresholds[i])] = s.fast_p[i];
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"isa", levels.empty() ? std::string() : levels.front()},
          {"results", s.results},
          {"correct", s.correct},
          {"geomean_speedup_correct_only", number(s.geomean_correct_only)},
          {"geomean_speedup_failures_as_one", number(s.geomean_failures_as_one)},
          {"fast_p", fast}};
}

}  // namespace opbench
