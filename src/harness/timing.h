// The paired timing protocol: baseline and candidate batches interleaved in pairs (ABBA order, so a
// linear drift of the machine cancels), each batch timed by the parent's clock, until the stopping
// rule says the speedup is known well enough or the time cap is reached. What one pair does (which
// sets, which inputs, what is checked) belongs to the evaluation session; this file owns the loop,
// the stopping rule and the estimate.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.h"

namespace opbench {

struct TimingOptions {
  double batch_seconds = 0.04;      // aim for batches of the slower side this long
  double min_batch_seconds = 0.002; // and the faster side's at least this long where the sets allow:
                                    // below it the timer, the pipe and the scheduler dominate
  int min_pairs = 5;
  double min_seconds = 1.0;
  double max_seconds = 10.0;        // time cap of the timing phase
  // Below this many pairs at the cap, timing goes on until it has them or reaches
  // cap_extension x max_seconds: a workload whose pairs are long and noisy (12p at the cpu size, 0.3 s
  // a pair, ±13% a pair's ratio) has ~30 pairs at 10 s and its A/A median wanders by ±5%; at ~100 by
  // ±2.7%. Workloads that reach the precision, or have the pairs, stop as before.
  int cap_min_pairs = 100;
  double cap_extension = 3.0;
  double target_precision = 0.01;   // stop when the 95% half-width of log(speedup) is under 1%
  double call_timeout_s = 30.0;     // a batch may take this long per call before it counts as a hang
  std::function<double()> clock;    // seconds; empty: the steady clock (tests give a fake one)
};

// Calls per batch for both sides of a pair: the slower side's batch near batch_seconds, raised so
// the faster side's reaches min_batch_seconds, never more than `sets` (a batch never runs a set
// twice, so every call's outputs can be checked).
int paired_batch_calls(double baseline_call_s, double candidate_call_s, int sets, const TimingOptions& options);

// Decides after each pair whether to go on.
class StoppingRule {
 public:
  explicit StoppingRule(const TimingOptions& options) : options_(options) {}
  // Returns the stop reason ("precision" or "time_cap"), or an empty string to measure another pair.
  std::string after_pair(const std::vector<double>& ratios, double elapsed_s);
  const RatioEstimate& estimate() const { return estimate_; }

 private:
  TimingOptions options_;
  RatioEstimate estimate_;
};

// One timed pair as the session measured it: per-call seconds of each side by the parent's clock,
// and the candidate's by the worker's own clock.
struct PairSample {
  double baseline_call_s = 0, candidate_call_s = 0, candidate_worker_call_s = 0, baseline_worker_call_s = 0;
};

struct PairedTiming {
  bool aborted = false;              // run_pair returned nothing: the session recorded why
  std::vector<PairSample> pairs;
  std::vector<double> ratios;        // baseline per-call / candidate per-call, one per pair
  size_t outlier_pairs = 0;          // pairs far from the rest (diagnostic; the estimate is robust to them)
  RatioEstimate estimate;            // Hodges-Lehmann over every pair
  double seconds = 0;
  std::string stop_reason;
};

// Runs pairs until the stopping rule stops them. `run_pair(index, baseline_first)` measures one
// pair, or returns nothing to abort (a failure the session has recorded). `clock` gives seconds
// (steady clock by default; tests give a fake one).
PairedTiming measure_paired(const std::function<std::optional<PairSample>(size_t pair, bool baseline_first)>& run_pair,
                            const TimingOptions& options, const std::function<void(const std::string&)>& progress = {},
                            const std::function<double()>& clock = {});

// The CPU seconds and wall seconds summed over the faster half of the batches (those whose wall time
// is at most the median's; at least one): what the thread-use check holds against threads x wall.
// Entries with a negative CPU reading are left out.
struct FastHalfUse {
  double cpu_s = 0, wall_s = 0;
  size_t batches = 0;
};
FastHalfUse fast_half_cpu_use(const std::vector<double>& cpu_s, const std::vector<double>& wall_s);

}  // namespace opbench
