// An evaluation session: one method per phase, run in order by run(). A phase that ends the
// evaluation (the kernel failed, a guard caught it) finishes the result and returns false; the
// remaining phases are not run. The session talks to the target only through the target seam
// (targets/target.h), so a fake target in the unit tests drives every phase without a compiler.
//
//   build            both sides built; the candidate vetted (imports, instruction set)
//   allocate         input sets and outputs sized against the memory bound
//   oracle           the baseline loaded and warmed up on every set (its call time sizes batches)
//   launch           the candidate loaded
//   correctness      `trials` checked calls, each on freshly generated inputs
//   timing           paired timing; every pair on freshly generated inputs that neither side has
//                    seen, the baseline's outputs on them the oracle for the candidate's
//   fresh inputs     cross-check: the candidate's time on refilled sets against sets it has seen
//   verdicts         roofline floor, thread use, clock agreement: the speedup's standing
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "harness/evaluate.h"

namespace opbench {

// Which sets of the baseline's output buffers hold the expected answers, and their digests. The
// answers stay where the baseline wrote them: the buffers the baseline's worker (trusted, and frozen
// while the candidate runs) shares with the parent alone; the candidate's worker never maps them. No
// copy is made, so a 512 MiB output costs no second 512 MiB; the digest says loudly if anything
// rewrote a set between its capture and its check. It is checked again before a comparison when a
// worker ran a batch since the capture (the caller's `epoch` counts batches); with none in between
// nothing could have (12p at the cpu size: 512 MiB hashed less in half the timed pairs).
class ExpectedOutputs {
 public:
  void capture(const BufferSet& from, int set, uint64_t epoch = 0);
  // The buffers holding set `set`'s expected outputs; throws std::logic_error when it was not
  // captured or changed since.
  const BufferSet& source(int set, uint64_t epoch = ~uint64_t(0)) const;
  bool has(int set) const;
  void clear() { digests_.clear(); }

 private:
  struct Entry {
    int set;
    uint64_t digest, epoch;
  };
  const BufferSet* from_ = nullptr;
  std::vector<Entry> digests_;
};

class EvaluationSession {
 public:
  EvaluationSession(const WorkloadSpec& spec, const Implementation& candidate, Target& target, const EvalOptions& options);
  ~EvaluationSession();

  Result run();

  bool build();
  bool allocate();
  bool oracle();
  bool launch();
  bool correctness();
  bool timing();
  bool fresh_inputs();
  void verdicts();

  const Result& result() const { return r_; }

 private:
  using Clock = std::chrono::steady_clock;
  bool finish(Status status, const std::string& message);
  bool kernel_failed(const BatchOutcome& b);
  void say(const std::string& text) const;
  double seconds_left() const;  // until the evaluation's deadline; +inf without one
  void refill(int set);
  // The outputs poisoned, and the batch's inputs and outputs out of the caches: both sides of a pair
  // start with them in memory, none in cache.
  void poison_and_evict(BufferSet& outputs, int first, int calls);
  // Throws on failure. `digest_inputs` false: only the inputs' canaries are checked after it (a timed
  // pair checks the digests once, after both sides, in verify_set).
  BatchOutcome baseline_batch(int first, int calls, std::chrono::milliseconds limit, bool digest_inputs = true);
  // Runs a candidate batch; on failure finishes the result and returns nothing.
  std::optional<BatchOutcome> candidate_batch(int first, int calls, std::chrono::milliseconds limit);
  // Checks every call of a candidate batch whose expected outputs are captured, and (when `watch`)
  // the idle worker's CPU clock. False: the result is finished.
  bool verify_candidate(int first, int calls, const std::string& context, bool watch);
  std::string verify_set(int set);
  bool inputs_intact(int first, int calls, std::string* which, bool digest = true);
  std::chrono::milliseconds call_limit() const;
  std::chrono::milliseconds long_limit() const;

  const WorkloadSpec& spec_;
  Implementation candidate_;
  Target& target_;
  EvalOptions options_;
  Clock::time_point start_;
  Result r_;
  bool finished_ = false;
  std::unique_ptr<ResolvedWorkload> w_;
  int threads_ = 1;
  BuildOutcome baseline_build_, candidate_build_;
  int sets_ = 0;
  std::unique_ptr<BufferSet> inputs_, baseline_out_, candidate_out_;
  std::vector<uint64_t> input_digests_;
  ExpectedOutputs expected_;
  LaunchOutcome baseline_launch_, candidate_launch_;
  KernelRunner* baseline_ = nullptr;
  KernelRunner* kernel_ = nullptr;
  double baseline_call_s_ = 0, candidate_call_s_ = 0;
  std::vector<std::byte> scratch_, expected_chunk_;
  std::mt19937_64 watch_draw_;
  double candidate_cpu_at_launch_ = -1;
  // The candidate's worker CPU seconds and the parent's wall seconds of every timed batch (its
  // prepare and run requests), for the thread-use check.
  std::vector<double> timed_batch_cpu_s_, timed_batch_wall_s_;
  double last_batch_cpu_s_ = -1, last_batch_wall_s_ = 0;
  uint64_t batches_run_ = 0;  // batches of either worker so far: the epoch of ExpectedOutputs
};

}  // namespace opbench
