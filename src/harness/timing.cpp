#include "harness/timing.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/stats.h"

namespace opbench {
namespace {

int batch_calls(double call_s, int sets, const TimingOptions& o) {
  if (call_s <= 0) return 1;
  return int(std::clamp(std::round(o.batch_seconds / call_s), 1.0, double(sets)));
}

std::chrono::milliseconds batch_timeout(const TimedSide& side, const TimingOptions& o) {
  double expected = side.estimated_call_s * side.calls_per_batch;
  double limit = std::max(o.call_timeout_s, 5.0 * expected);
  return std::chrono::milliseconds(int64_t(limit * 1000));
}

// One batch of a side. Returns false when the side failed.
bool run_batch(TimedSide& side, int sets, const TimingOptions& o, bool record, BatchOutcome* failure, bool* check_failed) {
  if (side.before_batch && !side.before_batch(side.next_set, side.calls_per_batch)) {
    *check_failed = true;
    return false;
  }
  BatchOutcome b = side.runner->run(side.next_set, side.calls_per_batch, batch_timeout(side, o));
  if (!b.ok()) {
    *failure = b;
    return false;
  }
  if (side.after_batch && !side.after_batch(side.next_set, side.calls_per_batch)) {
    *check_failed = true;
    return false;
  }
  for (int i = 0; i < side.calls_per_batch && i < sets; ++i) side.sets_written[size_t((side.next_set + i) % sets)] = true;
  side.next_set = (side.next_set + side.calls_per_batch) % sets;
  if (record) {
    side.per_call_s.push_back(b.parent_seconds / side.calls_per_batch);
    side.worker_per_call_s.push_back(b.worker_seconds / side.calls_per_batch);
    side.calls += size_t(side.calls_per_batch);
  } else {
    side.estimated_call_s = b.parent_seconds / side.calls_per_batch;
  }
  return true;
}

}  // namespace

PairedTiming measure_paired(TimedSide& baseline, TimedSide& candidate, int sets, const TimingOptions& o,
                            const std::function<void(const std::string&)>& progress) {
  PairedTiming out;
  baseline.sets_written.assign(size_t(sets), false);
  candidate.sets_written.assign(size_t(sets), false);
  // The two sides rotate half a rotation apart, so a batch never starts on the set the other side
  // has just pulled into the cache.
  baseline.next_set = 0;
  candidate.next_set = sets / 2;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto run_side = [&](TimedSide& side, bool record) {
    BatchOutcome failure;
    bool check_failed = false;
    if (run_batch(side, sets, o, record, &failure, &check_failed)) return true;
    if (&side == &baseline)
      throw std::runtime_error("the baseline failed while being timed: " + (check_failed ? std::string("a check failed") : failure.detail));
    out.candidate_failed = true;
    out.stopped_by_check = check_failed;
    out.failure = failure;
    return false;
  };

  // Warm-up pair: sizes the batches from a measured call, then is discarded.
  for (TimedSide* side : {&baseline, &candidate}) {
    side->calls_per_batch = batch_calls(side->estimated_call_s, sets, o);
    if (!run_side(*side, false)) return out;
    side->calls_per_batch = batch_calls(side->estimated_call_s, sets, o);
  }

  for (size_t pair = 0;; ++pair) {
    // ABBA: even pairs run the baseline first, odd pairs the candidate first.
    TimedSide* first = pair % 2 == 0 ? &baseline : &candidate;
    TimedSide* second = pair % 2 == 0 ? &candidate : &baseline;
    if (!run_side(*first, true) || !run_side(*second, true)) return out;
    out.ratios.push_back(baseline.per_call_s.back() / candidate.per_call_s.back());

    const double t = elapsed();
    const RatioEstimate r = paired_ratio(drop_outlier_ratios(out.ratios, &out.outlier_pairs));
    out.estimate = r;
    const double cand_precision = relative_ci95_of_mean(candidate.per_call_s);
    if (progress)
      progress(fmt::format("pair {}: speedup {:.3f} ±{:.1f}%  {:.1f}s", pair + 1, r.geomean, 100 * r.rel_halfwidth, t));
    const bool enough = int(out.ratios.size()) >= o.min_pairs && t >= o.min_seconds;
    if (enough && r.rel_halfwidth <= o.target_precision && cand_precision <= o.target_precision) {
      out.stop_reason = "precision";
      break;
    }
    // The cap stops once there is an interval at all (two pairs); a slow kernel may overrun it by
    // those two pairs.
    if (t >= o.max_seconds && out.ratios.size() >= 2) {
      out.stop_reason = "time_cap";
      break;
    }
  }
  out.seconds = elapsed();
  return out;
}

}  // namespace opbench
