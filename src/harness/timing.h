// The paired timing protocol: baseline and candidate batches interleaved (ABBA order, so a linear
// drift of the machine cancels), each batch timed by the parent's clock, rotating through the input
// sets, until a noise rule or a time cap stops it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/stats.h"
#include "targets/target.h"

namespace opbench {

struct TimingOptions {
  double batch_seconds = 0.04;     // aim for batches this long: far above the pipe round trip
  int min_pairs = 5;
  double min_seconds = 1.0;
  double max_seconds = 10.0;       // time cap of the timing phase
  double target_precision = 0.01;  // stop when the 95% half-widths are under 1%
  double call_timeout_s = 30.0;    // a batch may take this long per call before it counts as a hang
};

struct TimedSide {
  KernelRunner* runner = nullptr;
  double estimated_call_s = 0;      // from earlier calls, to size the batches
  int calls_per_batch = 1;
  int next_set = 0;
  std::vector<double> per_call_s;   // parent's clock, one entry per timed batch
  std::vector<double> worker_per_call_s;
  size_t calls = 0;
  std::vector<bool> sets_written;
  // Run around every batch of this side, warm-up included, outside its timed window: poisoning and
  // exposing the batch's sets before, checking its outputs after. Returning false stops the protocol
  // (the hook keeps the reason).
  std::function<bool(int first_set, int calls)> before_batch, after_batch;
};

struct PairedTiming {
  bool candidate_failed = false;
  BatchOutcome failure;             // when candidate_failed by its runner
  bool stopped_by_check = false;    // a before/after hook of the candidate returned false
  std::vector<double> ratios;       // baseline per-call / candidate per-call, one per pair
  size_t outlier_pairs = 0;         // pairs left out of the estimate (see drop_outlier_ratios)
  RatioEstimate estimate;           // over the pairs kept
  double seconds = 0;
  std::string stop_reason;
};

// Runs the protocol. `sets` is the number of input sets to rotate through; a batch never has more
// calls than sets, so no set is used twice in one batch and every call's outputs can be checked. Throws if the trusted
// baseline fails (a harness or machine problem, not the candidate's).
PairedTiming measure_paired(TimedSide& baseline, TimedSide& candidate, int sets, const TimingOptions& options,
                            const std::function<void(const std::string&)>& progress = {});

}  // namespace opbench
