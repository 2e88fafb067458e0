#include "harness/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace opbench {

int paired_batch_calls(double baseline_call_s, double candidate_call_s, int sets, const TimingOptions& o) {
  const double slow = std::max(baseline_call_s, candidate_call_s), fast = std::min(baseline_call_s, candidate_call_s);
  if (!(slow > 0)) return 1;
  double calls = std::round(o.batch_seconds / slow);
  if (fast > 0) calls = std::max(calls, std::ceil(o.min_batch_seconds / fast - 1e-9));
  return int(std::clamp(calls, 1.0, double(std::max(sets, 1))));
}

std::string StoppingRule::after_pair(const std::vector<double>& ratios, double elapsed_s) {
  // The estimate costs O(n^2) in the pairs: past 100 pairs it is refreshed every ~2% more pairs
  // (and always when the time cap ends the phase), so thousands of short pairs stay cheap.
  const size_t n = ratios.size();
  const bool refresh = n <= 100 || n % (n / 50) == 0 || elapsed_s >= options_.max_seconds;
  if (refresh) estimate_ = hodges_lehmann_ratio(ratios);
  const bool enough = int(ratios.size()) >= options_.min_pairs && elapsed_s >= options_.min_seconds;
  if (enough && estimate_.rel_halfwidth <= options_.target_precision) return "precision";
  // The cap stops once there is an interval at all (two pairs) and cap_min_pairs of them, or at the
  // extended cap; a slow kernel may overrun it by those two pairs.
  const bool enough_for_cap = int(n) >= options_.cap_min_pairs || elapsed_s >= options_.max_seconds * std::max(1.0, options_.cap_extension);
  if (elapsed_s >= options_.max_seconds && n >= 2 && enough_for_cap) return "time_cap";
  return "";
}

PairedTiming measure_paired(const std::function<std::optional<PairSample>(size_t, bool)>& run_pair, const TimingOptions& o,
                            const std::function<void(const std::string&)>& progress, const std::function<double()>& clock) {
  const auto start = std::chrono::steady_clock::now();
  const auto& source = clock ? clock : o.clock;
  auto now = [&] { return source ? source() : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const double t0 = now();
  PairedTiming out;
  StoppingRule rule(o);
  for (size_t pair = 0;; ++pair) {
    // ABBA: even pairs run the baseline first, odd pairs the candidate first.
    std::optional<PairSample> sample = run_pair(pair, pair % 2 == 0);
    if (!sample) {
      out.aborted = true;
      break;
    }
    out.pairs.push_back(*sample);
    out.ratios.push_back(sample->baseline_call_s / sample->candidate_call_s);
    const double t = now() - t0;
    out.stop_reason = rule.after_pair(out.ratios, t);
    out.estimate = rule.estimate();
    if (progress)
      progress(fmt::format("pair {}: speedup {:.3f} [{:.3f}, {:.3f}]  {:.1f}s", pair + 1, out.estimate.geomean, out.estimate.ci95_low,
                           out.estimate.ci95_high, t));
    if (!out.stop_reason.empty()) break;
  }
  if (!out.ratios.empty()) out.estimate = hodges_lehmann_ratio(out.ratios);
  drop_outlier_ratios(out.ratios, &out.outlier_pairs);
  out.seconds = now() - t0;
  return out;
}

FastHalfUse fast_half_cpu_use(const std::vector<double>& cpu_s, const std::vector<double>& wall_s) {
  std::vector<std::pair<double, double>> batches;  // (wall, cpu)
  for (size_t i = 0; i < std::min(cpu_s.size(), wall_s.size()); ++i)
    if (cpu_s[i] >= 0 && wall_s[i] > 0) batches.emplace_back(wall_s[i], cpu_s[i]);
  FastHalfUse out;
  if (batches.empty()) return out;
  std::sort(batches.begin(), batches.end());
  const size_t keep = (batches.size() + 1) / 2;  // up to and including the median
  for (size_t i = 0; i < keep; ++i) {
    out.wall_s += batches[i].first;
    out.cpu_s += batches[i].second;
  }
  out.batches = keep;
  return out;
}

}  // namespace opbench
