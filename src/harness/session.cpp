#include "harness/session.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <thread>

#include <fmt/format.h>

#include "core/compare.h"
#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/machine.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/utf8.h"
#include "harness/roof_time.h"

namespace opbench {
namespace {

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

// After a candidate batch the parent may watch the idle worker's CPU clock: it lets the worker
// settle (its OpenMP pool spins GOMP_SPINCOUNT=1000 iterations, then sleeps), then measures a quiet
// window, which must stay quiet. Linux folds a running thread's time into the clock at scheduler
// ticks (4 ms at HZ=250), so the window is longer than a tick: a thread that runs through it is
// charged at least a tick. Honest workers measured 0.00-0.05 ms there.
constexpr auto kIdleSettle = std::chrono::milliseconds(2);
constexpr auto kIdleWatch = std::chrono::milliseconds(5);
constexpr double kIdleQuietLimitS = 0.001;
// Timed batches are watched at random, this share of them (trials and fresh-input calls always),
// so the watch costs little and a kernel cannot tell which batches are watched.
constexpr double kWatchShare = 0.25;

// The fresh-input cross-check: a candidate this much slower per call on never-seen inputs than on
// inputs it has seen (the fastest of the rounds for each; on the time of record and, where the
// target has one, on the worker's CPU clock too), relative to the baseline (see `corrected` in
// fresh_inputs), in at least 80% of the rounds (five, and five more when three are over), is reusing
// work across calls. Caching kernels show 5-40x; honest ones measured up to 1.6x on a busy machine
// by the median of the rounds' wall-clock ratios, up to 2.07x with builds beside them (CI once
// reported an honest reference untrusted with a build beside it; its reason was not kept). Parts
// shorter than kFreshMinPartS are dominated by timer and scheduling noise (an honest A/A at the test
// size once read 6.8x there), so the check is inconclusive then; the timed pairs never reuse inputs
// anyway, so a cache cannot gain there.
constexpr double kFreshSlowdownLimit = 2.0;
// The fastest part of each kind over this, relative to the baseline, on every clock, is a verdict
// whatever the rounds say: load only slows a part down, so a fastest seen part this much faster than
// the fastest new one is reuse. Honest kernels beside two compile loops read at most 4.94x (2026-12-02);
// a caching kernel's short seen parts, held up by a busy core in some rounds, keep it out of the
// per-round majority but not out of this.
constexpr double kFreshStrongLimit = 8.0;
constexpr int kFreshRounds = 5;
// The baseline's own ratio (fastest never-seen part over fastest seen part, time of record) outside
// [1/band, band]: the machine skewed the reading. Alone it reads 0.99-1.01; beside two other
// evaluations pinned to the same core, 0.52-2.42; CI once read 8.1x (2026-12-07), and in that run
// the caching exploit's own ratio was 1.17x.
constexpr double kFreshBaselineBand = 1.5;
constexpr double kFreshMinPartS = 0.002;

// A candidate whose median call is faster than this share of the roofline floor did something
// the machine cannot do honestly; between it and 1.0 the result is flagged (cache-resident data
// can legitimately beat the DRAM roof at small sizes).
constexpr double kRooflineUntrustedShare = 0.5;
// CPU time above threads x wall by this factor means the kernel ran more threads than it was given.
constexpr double kThreadOveruse = 1.25;
// The default bound on one evaluation's buffers (with a quarter of the available memory).
constexpr uint64_t kDefaultMemoryBound = uint64_t(2) << 30;
// Device timers: how much more per call than the baseline the candidate's batches may hold outside
// the device's events (launch, synchronisation and copy latencies vary by tens of microseconds).
constexpr double kDeviceOverheadSlackMs = 0.05;

Status status_of(const BatchOutcome& b) {
  if (b.kind == BatchOutcome::Kind::untrusted) return Status::untrusted;  // i11: a worker that would not freeze
  return b.kind == BatchOutcome::Kind::timed_out ? Status::timeout : Status::runtime_error;
}

double to_seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void ExpectedOutputs::capture(const BufferSet& from, int set, uint64_t epoch) {
  if (from_ && from_ != &from) digests_.clear();
  from_ = &from;
  const uint64_t d = from.digest(set);
  for (Entry& e : digests_)
    if (e.set == set) {
      e = {set, d, epoch};
      return;
    }
  digests_.push_back({set, d, epoch});
}

bool ExpectedOutputs::has(int set) const {
  return std::any_of(digests_.begin(), digests_.end(), [&](const Entry& e) { return e.set == set; });
}

const BufferSet& ExpectedOutputs::source(int set, uint64_t epoch) const {
  for (const Entry& e : digests_)
    if (e.set == set) {
      if (epoch != e.epoch && from_->digest(set) != e.digest)
        throw std::logic_error(fmt::format("the expected outputs of set {} changed between their capture and their check", set));
      return *from_;
    }
  throw std::logic_error(fmt::format("no expected outputs captured for set {}", set));
}

EvaluationSession::EvaluationSession(const WorkloadSpec& spec, const Implementation& candidate, Target& target, const EvalOptions& options)
    : spec_(spec), candidate_(candidate), target_(target), options_(options), start_(Clock::now()), watch_draw_(fresh_secret_seed()) {}

EvaluationSession::~EvaluationSession() = default;

void EvaluationSession::say(const std::string& text) const {
  if (options_.progress) options_.progress(text);
}

double EvaluationSession::seconds_left() const {
  if (options_.deadline_s <= 0) return INFINITY;
  return options_.deadline_s - to_seconds(Clock::now() - start_);
}

std::chrono::milliseconds EvaluationSession::call_limit() const {
  return std::chrono::milliseconds(int64_t(options_.timing.call_timeout_s * 1000));
}

// Batches over many sets (the warm-up, the cross-check) may take `call_timeout` per call.
std::chrono::milliseconds EvaluationSession::long_limit() const {
  return std::chrono::milliseconds(int64_t(std::max(60.0, options_.timing.call_timeout_s * sets_) * 1000));
}

bool EvaluationSession::finish(Status s, const std::string& message) {
  r_.status = s;
  r_.message = utf8_sanitize(message);
  if (s != Status::correct && r_.correctness.reason.empty()) r_.correctness.reason = r_.message;
  if (kernel_) r_.kernel_output = utf8_truncate(kernel_->output_log(), 16000);
  r_.eval_s = to_seconds(Clock::now() - start_);
  finished_ = true;
  return false;
}

bool EvaluationSession::kernel_failed(const BatchOutcome& b) { return finish(status_of(b), b.detail); }

Result EvaluationSession::run() {
  w_ = std::make_unique<ResolvedWorkload>(resolve_workload(spec_, options_.size, options_.overrides, target_.float_dtype()));
  threads_ = options_.threads > 0 ? options_.threads : default_thread_count();
  r_.workload = spec_.id;
  r_.size = options_.size;
  r_.target = target_.name();
  for (const auto& [k, v] : w_->symbols)
    if (k != "elem") r_.shape[k] = v;
  r_.impl = {candidate_.kind, std::filesystem::absolute(candidate_.source).string(), sha256_hex(read_file(candidate_.source))};
  r_.threads = threads_;
  r_.machine = to_json(machine_info());
  r_.timestamp = now_iso8601();
  r_.correctness.atol = w_->tolerance.atol;
  r_.correctness.rtol = w_->tolerance.rtol;
  r_.work.flops = w_->flops;
  r_.work.useful_flops = w_->useful_flops;
  r_.work.bytes = w_->min_bytes;
  r_.work.floor_flops = w_->floor_flops;
  r_.work.floor_bytes = w_->floor_bytes;
  r_.work.intensity = w_->intensity();
  if (build() && allocate() && oracle() && launch() && correctness() && (!options_.time || (timing() && fresh_inputs()))) {
    verdicts();
    if (!finished_) finish(Status::correct, "");
  }
  return r_;
}

// 1. Both sides built. The baseline is trusted and may link the vendor libraries.
bool EvaluationSession::build() {
  say("building");
  const Implementation baseline_impl = builtin_implementation(spec_, "baseline", target_.source_extension());
  baseline_build_ = target_.build({baseline_impl.source, "baseline", true, {}, {}, options_.isa});
  if (!baseline_build_.ok)
    throw std::runtime_error(fmt::format("the baseline of {} does not build:\n{}", spec_.id, baseline_build_.log));
  candidate_build_ = target_.build({candidate_.source, candidate_.kind, candidate_.trusted(), candidate_.defines, {}, options_.isa});
  r_.isa = candidate_build_.isa;
  r_.build_s = candidate_build_.seconds;
  r_.build_cached = candidate_build_.cached;
  r_.compiler = candidate_build_.compiler;
  r_.build_log = utf8_truncate(candidate_build_.log, 8000);
  if (!candidate_build_.ok) return finish(Status::compile_error, "the kernel did not compile; see build.log");
  if (!candidate_.trusted()) {
    const std::string refusal = target_.vet(candidate_build_);
    if (!refusal.empty()) return finish(Status::rejected, refusal);
  }
  return true;
}

// 2. Buffers for the input sets, sized against the memory bound.
bool EvaluationSession::allocate() {
  uint64_t bound = options_.max_memory_bytes;
  // Default: a quarter of the available memory, at most 2 GiB; a workload whose single set is
  // larger still gets one set (the bound is the user's to set with --max-memory).
  if (bound == 0) bound = std::max<uint64_t>(std::min<uint64_t>(available_memory_bytes() / 4, kDefaultMemoryBound), bytes_per_set(*w_));
  const uint64_t one_set = bytes_per_set(*w_);
  if (options_.max_memory_bytes > 0 && one_set > options_.max_memory_bytes)
    throw UsageError(fmt::format("{} at size {} needs {:.1f} MiB for one input set, more than --max-memory ({:.1f} MiB)", spec_.id,
                                 options_.size, double(one_set) / (1 << 20), double(options_.max_memory_bytes) / (1 << 20)));
  sets_ = rotation_sets(*w_, bound);
  r_.integrity.input_sets = size_t(sets_);
  say(fmt::format("allocating {} input sets", sets_));
  inputs_ = target_.allocate(w_->inputs, sets_, "inputs");
  baseline_out_ = target_.allocate(w_->outputs, sets_, "baseline-outputs");
  candidate_out_ = target_.allocate(w_->outputs, sets_, "candidate-outputs");
  input_digests_.assign(size_t(sets_), 0);
  return true;
}

void EvaluationSession::refill(int set) {
  fill_input_set(*w_, *inputs_, set, fresh_secret_seed());
  input_digests_[size_t(set)] = inputs_->digest(set);
}

void EvaluationSession::poison_and_evict(BufferSet& outputs, int first, int calls) {
  for (int i = 0; i < calls; ++i) {
    inputs_->evict((first + i) % sets_);
    outputs.poison_and_evict((first + i) % sets_);
  }
}

BatchOutcome EvaluationSession::baseline_batch(int first, int calls, std::chrono::milliseconds limit, bool digest_inputs) {
  poison_and_evict(*baseline_out_, first, calls);
  ++batches_run_;
  BatchOutcome b = baseline_->prepare(first, calls, limit);
  if (b.ok()) b = baseline_->run(first, calls, limit);
  if (!b.ok()) throw std::runtime_error("the baseline failed: " + b.detail);
  std::string which;
  if (!inputs_intact(first, calls, &which, digest_inputs)) throw std::runtime_error("the baseline modified its inputs (" + which + ")");
  return b;
}

std::optional<BatchOutcome> EvaluationSession::candidate_batch(int first, int calls, std::chrono::milliseconds limit) {
  poison_and_evict(*candidate_out_, first, calls);
  ++batches_run_;
  const double cpu_before = kernel_->cpu_seconds_total();
  BatchOutcome b = kernel_->prepare(first, calls, limit);
  last_batch_wall_s_ = b.parent_seconds;
  if (b.ok()) {
    b = kernel_->run(first, calls, limit);
    last_batch_wall_s_ += b.parent_seconds;
  }
  const double cpu_after = kernel_->cpu_seconds_total();
  last_batch_cpu_s_ = cpu_before >= 0 && cpu_after >= cpu_before ? cpu_after - cpu_before : -1;
  if (!b.ok()) {
    kernel_failed(b);
    return std::nullopt;
  }
  return b;
}

bool EvaluationSession::inputs_intact(int first, int calls, std::string* which, bool digest) {
  for (int i = 0; i < calls; ++i) {
    const int s = (first + i) % sets_;
    std::string damaged;
    if (!inputs_->canaries_intact(s, &damaged)) {
      *which = "wrote past the end of input " + damaged;
      return false;
    }
    if (digest && inputs_->digest(s) != input_digests_[size_t(s)]) {
      *which = fmt::format("input set {} changed", s);
      return false;
    }
  }
  return true;
}

// Checks set `set` of the candidate: canaries, inputs intact, values against the expected outputs.
// Returns an empty string when it passes, else the reason.
std::string EvaluationSession::verify_set(int set) {
  std::string damaged;
  if (!candidate_out_->canaries_intact(set, &damaged)) return "the kernel wrote past the end of output " + damaged;
  if (!inputs_->canaries_intact(set, &damaged)) return "the kernel wrote past the end of input " + damaged;
  if (inputs_->digest(set) != input_digests_[size_t(set)]) return "the kernel modified its inputs";
  std::string reason;
  CorrectnessInfo& info = r_.correctness;
  const BufferSet& expected = expected_.source(set, batches_run_);
  for (int t = 0; t < candidate_out_->tensors(); ++t) {
    const auto& tensor = w_->outputs[size_t(t)];
    // Compared a chunk at a time, by the evaluation's threads (both workers are frozen meanwhile);
    // the pieces are merged in order, so the first mismatch is the tensor's first. Where both sides
    // can be read in place (the cpu arena) they are; else a chunk of each side is copied (256 KiB of
    // f32, which stays in the comparing thread's L2 between its copy and its comparison), never a
    // whole host copy of either side.
    constexpr size_t kChunkElements = size_t(64) << 10;
    const size_t elem = dtype_size(tensor.dtype), n = tensor.numel();
    const size_t chunks = (n + kChunkElements - 1) / kChunkElements;
    std::vector<Comparison> parts(chunks);
    const int workers = int(std::min<size_t>(chunks, size_t(std::max(1, threads_))));
    const std::byte* got_view = candidate_out_->host_view(set, t);
    const std::byte* want_view = expected.host_view(set, t);
    if (got_view && want_view) {
      parallel_for(chunks, workers, [&](size_t k, size_t) {
        const size_t b = k * kChunkElements, e = std::min(n, b + kChunkElements);
        parts[k] = compare_tensors(got_view + b * elem, want_view + b * elem, e - b, tensor.dtype, w_->tolerance);
      });
    } else {
      std::vector<std::vector<std::byte>> got(size_t(std::max(workers, 1))), want(got.size());
      got[0].swap(scratch_);  // worker 0 reuses the session's buffers across calls
      want[0].swap(expected_chunk_);
      parallel_for(chunks, workers, [&](size_t k, size_t w) {
        const size_t b = k * kChunkElements, e = std::min(n, b + kChunkElements);
        got[w].resize(std::min(n, kChunkElements) * elem);
        want[w].resize(got[w].size());
        candidate_out_->read_part(set, t, b * elem, got[w].data(), (e - b) * elem);
        expected.read_part(set, t, b * elem, want[w].data(), (e - b) * elem);
        parts[k] = compare_tensors(got[w].data(), want[w].data(), e - b, tensor.dtype, w_->tolerance);
      });
      got[0].swap(scratch_);
      want[0].swap(expected_chunk_);
    }
    Comparison c;
    for (const Comparison& part : parts) c.merge(part);
    info.elements_checked += c.elements;
    info.mismatches += c.mismatches;
    info.non_finite += c.non_finite;
    info.max_abs_err = std::max(info.max_abs_err, c.max_abs_err);
    info.max_rel_err = std::max(info.max_rel_err, c.max_rel_err);
    if (!c.passed() && reason.empty()) {
      reason = fmt::format("output {}: {} of {} elements outside atol {:g} + rtol {:g}·|expected|{}; first at index {}: got {:g}, expected {:g}",
                           tensor.name, c.mismatches, c.elements, w_->tolerance.atol, w_->tolerance.rtol,
                           c.non_finite ? fmt::format(" ({} NaN or Inf)", c.non_finite) : std::string(), c.first_mismatch, c.first_got,
                           c.first_expected);
    }
  }
  return reason;
}

bool EvaluationSession::verify_candidate(int first, int calls, const std::string& context, bool watch) {
  for (int i = 0; i < calls; ++i) {
    const int s = (first + i) % sets_;
    std::string reason = verify_set(s);
    ++r_.integrity.calls_verified;
    if (!reason.empty()) {
      r_.correctness.reason = fmt::format("{}: {}", context, reason);
      return finish(Status::incorrect, r_.correctness.reason);
    }
  }
  if (!watch || !kernel_->capabilities().idle_cpu_clock) return true;
  std::this_thread::sleep_for(kIdleSettle);
  const double settled = kernel_->cpu_seconds_since_reply();
  std::this_thread::sleep_for(kIdleWatch);
  const double later = kernel_->cpu_seconds_since_reply();
  if (settled >= 0 && later >= 0) {
    r_.integrity.max_idle_cpu_ms = std::max(r_.integrity.max_idle_cpu_ms, (later - settled) * 1e3);
    ++r_.integrity.batches_watched;
    if (later - settled > kIdleQuietLimitS)
      return finish(Status::untrusted,
                    fmt::format("{}: the worker used {:.2f} ms of CPU in a {} ms window starting {} ms after ob_run returned (work "
                                "left running in the background)",
                                context, (later - settled) * 1e3, kIdleWatch.count(), kIdleSettle.count()));
  }
  return true;
}

// 3. The baseline: loaded in the same sandbox as the candidate (both are timed under the same
// conditions) and warmed up on every set; its call time sizes the batches.
bool EvaluationSession::oracle() {
  say("loading the baseline");
  for (int s = 0; s < sets_; ++s) refill(s);
  LaunchOptions launch_options;
  launch_options.threads = threads_;
  launch_options.sandbox = options_.sandbox;
  launch_options.warm_l2 = options_.warm_l2;
  baseline_launch_ = target_.launch(baseline_build_, *inputs_, *baseline_out_, launch_options);
  if (!baseline_launch_.runner) throw std::runtime_error("the baseline did not load: " + baseline_launch_.reason);
  baseline_ = baseline_launch_.runner.get();
  say("warming up the baseline");
  const BatchOutcome warm = baseline_batch(0, sets_, long_limit());
  baseline_call_s_ = warm.record_seconds() / sets_;
  return true;
}

// 4. The candidate, loaded into its own worker.
bool EvaluationSession::launch() {
  LaunchOptions launch_options;
  launch_options.threads = threads_;
  launch_options.sandbox = options_.sandbox;
  launch_options.warm_l2 = options_.warm_l2;
  candidate_launch_ = target_.launch(candidate_build_, *inputs_, *candidate_out_, launch_options);
  if (!candidate_launch_.runner) {
    const Status s = candidate_launch_.failure == LaunchOutcome::Failure::rejected    ? Status::rejected
                     : candidate_launch_.failure == LaunchOutcome::Failure::timed_out ? Status::timeout
                     : candidate_launch_.failure == LaunchOutcome::Failure::untrusted ? Status::untrusted  // i11
                                                                                      : Status::runtime_error;
    return finish(s, candidate_launch_.reason);
  }
  kernel_ = candidate_launch_.runner.get();
  r_.sandbox = kernel_->describe_sandbox();
  const RunnerCapabilities caps = kernel_->capabilities();
  if (!caps.idle_cpu_clock) r_.integrity.checks_not_run.push_back("idle-worker CPU watch (the target has no idle CPU clock)");
  if (!caps.freezes_when_idle) r_.integrity.checks_not_run.push_back("freezing the idle worker (not offered by the target)");
  if (!caps.cpu_time_accounting) r_.integrity.checks_not_run.push_back("thread-use check (no CPU time measured from outside)");
  candidate_cpu_at_launch_ = kernel_->cpu_seconds_total();
  r_.integrity.worker_cpus = kernel_->cpus_allowed();  // i11
  return true;
}

// 5. Correctness trials: each on a freshly generated set, the baseline's answer for it the oracle.
bool EvaluationSession::correctness() {
  r_.correctness.trials = options_.trials;
  candidate_call_s_ = INFINITY;
  for (int trial = 0; trial < options_.trials; ++trial) {
    say(fmt::format("correctness trial {}/{}", trial + 1, options_.trials));
    const int set = trial % sets_;
    refill(set);
    expected_.clear();
    baseline_batch(set, 1, long_limit());
    expected_.capture(*baseline_out_, set);
    auto b = candidate_batch(set, 1, call_limit());
    if (!b) return false;
    candidate_call_s_ = std::min(candidate_call_s_, b->record_seconds());
    if (!verify_candidate(set, 1, fmt::format("trial {}", trial + 1), true)) return false;
    ++r_.correctness.passed;
  }
  return true;
}

// 6. Paired timing. Before every pair the parent writes freshly generated inputs into the pair's
// sets, so no input content is ever timed twice for the candidate and none exists before its pair
// starts: a kernel that caches results, or computes ahead on sets it can reach, gains nothing. Both
// sides of a pair run the same sets (ABBA order); the baseline's outputs on them are the oracle for
// the candidate's, and every timed call is checked.
bool EvaluationSession::timing() {
  say("timing");
  // The trials ran with only each batch's sets mapped (a stray read faults, named); the pairs run
  // with every set mapped: re-hiding the sets a batch switches would be timed (KernelRunner::expose_all_sets).
  // Bounded like a batch over every set (long_limit, from --timeout): the request runs worker code only,
  // but a kernel owns that code and could hold the harness there.
  if (const BatchOutcome b = baseline_->expose_all_sets(long_limit()); !b.ok()) throw std::runtime_error("the baseline failed: " + b.detail);
  if (const BatchOutcome b = kernel_->expose_all_sets(long_limit()); !b.ok()) return kernel_failed(b);
  TimingOptions topts = options_.timing;
  const double left = seconds_left();
  if (std::isfinite(left)) {
    topts.max_seconds = std::max(0.0, std::min(topts.max_seconds, left * 0.6));
    topts.min_seconds = std::min(topts.min_seconds, topts.max_seconds);
    // The extended cap (too few pairs at the cap) stays inside the deadline as well.
    if (topts.max_seconds > 0) topts.cap_extension = std::clamp(left * 0.6 / topts.max_seconds, 1.0, std::max(1.0, topts.cap_extension));
  }
  const int calls = paired_batch_calls(baseline_call_s_, candidate_call_s_, sets_, topts);
  int next_first = 0;
  std::vector<double> worker_ms;
  size_t baseline_calls = 0, candidate_calls = 0;
  std::vector<double> base_ms, cand_ms;
  // Device timers (cuda): the parent's clock around each batch holds the flush, the synchronisation
  // and the copies back too; what it holds beyond the device time is compared between the sides.
  const bool device_timer = kernel_->capabilities().device_timer;
  std::vector<double> cand_overhead_ms, base_overhead_ms, host_excess_ms, sm_clocks;
  uint64_t throttle = 0;
  auto batch_limit = [&](double call_s) {
    return std::chrono::milliseconds(int64_t(std::max(topts.call_timeout_s, 5.0 * call_s * calls) * 1000));
  };
  auto run_pair = [&](size_t, bool baseline_first) -> std::optional<PairSample> {
    const int first = next_first;
    next_first = (next_first + calls) % sets_;
    for (int i = 0; i < calls; ++i) refill((first + i) % sets_);
    expected_.clear();
    PairSample sample;
    for (int side = 0; side < 2; ++side) {
      const bool baseline_turn = (side == 0) == baseline_first;
      if (baseline_turn) {
        // The inputs' digests are checked once for the pair, after both sides (verify_set): both
        // workers map them read-only, and a change either side made would show there.
        const BatchOutcome b = baseline_batch(first, calls, batch_limit(baseline_call_s_), false);
        sample.baseline_call_s = b.record_seconds() / calls;
        sample.baseline_worker_call_s = b.worker_seconds / calls;
        if (device_timer) base_overhead_ms.push_back((b.parent_seconds - b.record_seconds()) / calls * 1e3);
        for (int i = 0; i < calls; ++i) expected_.capture(*baseline_out_, (first + i) % sets_, batches_run_);
      } else {
        auto b = candidate_batch(first, calls, batch_limit(candidate_call_s_));
        if (!b) return std::nullopt;
        sample.candidate_call_s = b->record_seconds() / calls;
        sample.candidate_worker_call_s = b->worker_seconds / calls;
        if (last_batch_cpu_s_ >= 0) {
          timed_batch_cpu_s_.push_back(last_batch_cpu_s_);
          timed_batch_wall_s_.push_back(last_batch_wall_s_);
        }
        if (device_timer) {
          cand_overhead_ms.push_back((b->parent_seconds - b->record_seconds()) / calls * 1e3);
          host_excess_ms.push_back((b->worker_seconds - b->record_seconds()) / calls * 1e3);
          if (b->sm_clock_mhz > 0) sm_clocks.push_back(b->sm_clock_mhz);
          throttle |= b->throttle_reasons;
        }
        // A candidate that ran first must not have touched the inputs the baseline then answers for:
        // its canaries here, the contents' digests after the pair (verify_set fails the pair then).
        std::string which;
        if (!inputs_intact(first, calls, &which, false)) {
          finish(Status::incorrect, "a timed call: the kernel modified its inputs (" + which + ")");
          return std::nullopt;
        }
      }
    }
    const bool watch = std::uniform_real_distribution<double>(0, 1)(watch_draw_) < kWatchShare;
    if (!verify_candidate(first, calls, "a timed call", watch)) return std::nullopt;
    baseline_calls += size_t(calls);
    candidate_calls += size_t(calls);
    base_ms.push_back(sample.baseline_call_s * 1e3);
    cand_ms.push_back(sample.candidate_call_s * 1e3);
    worker_ms.push_back(sample.candidate_worker_call_s * 1e3);
    return sample;
  };
  const PairedTiming pt = measure_paired(run_pair, topts, options_.progress);
  if (pt.aborted) return false;

  TimingInfo t;
  // Per pair: the candidate's parent/worker ratio, and the part of the candidate's time outside its
  // worker's clock that the baseline's same-sized batch does not also show, as a share of the
  // candidate's worker time (on a loaded machine the parent wakes late after every batch, either side).
  std::vector<double> clock_ratio, unexplained;
  for (const auto& p : pt.pairs)
    if (p.candidate_worker_call_s > 0) {
      clock_ratio.push_back(p.candidate_call_s / p.candidate_worker_call_s);
      if (p.baseline_worker_call_s > 0)
        unexplained.push_back(((p.candidate_call_s - p.candidate_worker_call_s) - (p.baseline_call_s - p.baseline_worker_call_s)) /
                              p.candidate_worker_call_s);
    }
  t.per_call_ms = summarize(cand_ms);
  t.calls = candidate_calls;
  t.batches = cand_ms.size();
  t.calls_per_batch = size_t(calls);
  t.worker_median_ms = summarize(worker_ms).median;
  t.parent_over_worker = summarize(clock_ratio).median;
  t.baseline_per_call_ms = summarize(base_ms);
  t.baseline_calls = baseline_calls;
  t.seconds = pt.seconds;
  t.stop_reason = pt.stop_reason;
  t.outlier_pairs = pt.outlier_pairs;
  if (!device_timer) {
    // The parent's clock is the figure of record; a large gap to the worker's own clock means time
    // spent outside the calls (process start-up, paging) or a worker that misreports. The gap the
    // baseline's batches show too is the machine's, not the candidate's: what counts is the excess
    // over it (a worker that claims more time than the parent saw is flagged as before).
    const double excess = unexplained.empty() ? t.parent_over_worker - 1 : summarize(unexplained).median;
    if (excess > 0.05 || t.parent_over_worker < 0.95) t.flags.push_back("parent_worker_clock_disagree");
  } else {
    // The device's events are the figure of record. The worker reports them, so the parent's clock
    // checks them: the candidate's time outside its events (flush, synchronisation, copies back, the
    // same work for both sides) may not exceed the baseline's by much; and the worker's host clock
    // around each call (which waits for the whole device) may not exceed the events by much, or the
    // kernel left work on streams the events do not see.
    const double cand_over = summarize(cand_overhead_ms).median, base_over = summarize(base_overhead_ms).median;
    if (cand_over > base_over + std::max(kDeviceOverheadSlackMs, 0.5 * base_over)) t.flags.push_back("device_time_unexplained");
    if (summarize(host_excess_ms).median > kDeviceOverheadSlackMs + 0.1 * t.per_call_ms.median) t.flags.push_back("work_outside_stream");
    const DeviceDescription d = kernel_->device();
    DeviceInfo info;
    info.name = d.name;
    info.driver = d.driver;
    info.l2_flushed = d.l2_flushed;
    info.sm_clock_max_mhz = d.sm_clock_max_mhz;
    if (!sm_clocks.empty()) {
      info.sm_clock_min_mhz = *std::min_element(sm_clocks.begin(), sm_clocks.end());
      info.sm_clock_median_mhz = summarize(sm_clocks).median;
    }
    info.throttle = throttle_reason_words(throttle);
    r_.device = info;
  }
  if (pt.stop_reason == "time_cap") t.flags.push_back("precision_not_reached");
  const RatioEstimate& ratio = pt.estimate;
  r_.speedup = SpeedupInfo{ratio.geomean, ratio.ci95_low, ratio.ci95_high, t.baseline_per_call_ms.median / t.per_call_ms.median,
                           ratio.count, "ok", ""};
  r_.timing = t;
  const double seconds = t.per_call_ms.median * 1e-3;
  r_.work.gflops_per_s = w_->useful_flops / seconds * 1e-9;
  r_.work.gbytes_per_s = w_->min_bytes / seconds * 1e-9;
  return true;
}

// 7. Cross-check on never-seen inputs. The first half of the sets is refilled in place (same
// addresses, new contents); each side then runs the other half (data it has seen) and right after
// it the refilled half. A kernel that remembers results by address returns stale outputs; one that
// remembers them by content is slower on the new half than on the old, where an honest kernel is
// not. With fresh inputs in every timed pair this no longer defends the speedup; it names a caching
// kernel as such.
bool EvaluationSession::fresh_inputs() {
  const int fresh = std::max(1, sets_ / 2), seen = sets_ - fresh;
  if (seen <= 0) {
    r_.integrity.fresh_check = "skipped: a single input set";
    return true;
  }
  if (seconds_left() < 5 * 2 * (baseline_call_s_ + candidate_call_s_) * sets_ + 1) {
    r_.integrity.fresh_check = "skipped: the evaluation's deadline";
    return true;
  }
  say("checking on never-seen inputs");
  // The seen half must hold content the candidate has run on: one untimed pass over it.
  expected_.clear();
  baseline_batch(fresh, seen, long_limit());
  for (int s = fresh; s < sets_; ++s) expected_.capture(*baseline_out_, s);
  if (!candidate_batch(fresh, seen, long_limit())) return false;
  if (!verify_candidate(fresh, seen, "a call on seen inputs", false)) return false;
  // Each part is timed on two clocks: the batch's time of record (the parent's, or the device's), and
  // the worker's CPU clock where the runner measures it from outside (cpu). A kernel that reuses work
  // is faster on what it has seen on both. Load bends each its own way: waiting for a core counts on
  // the wall clock and not on the CPU clock, while threads spinning at a barrier for a partner that
  // lost its core count on the CPU clock. So a verdict needs both clocks over the limit.
  const bool cpu_clock = kernel_->capabilities().cpu_time_accounting && !kernel_->capabilities().device_timer &&
                         baseline_->capabilities().cpu_time_accounting && !baseline_->capabilities().device_timer;
  // Per-call times, one per round: [clock][side][part]; clock 0 the time of record, 1 the CPU clock;
  // side 0 the candidate; part 0 seen inputs.
  std::vector<double> times[2][2][2];
  double shortest_part = INFINITY;
  auto record = [&](int side, int part, const BatchOutcome& b, double cpu_before, double cpu_after, int calls) {
    times[0][side][part].push_back(b.record_seconds() / calls);
    if (cpu_clock) times[1][side][part].push_back(cpu_before >= 0 && cpu_after >= cpu_before ? (cpu_after - cpu_before) / calls : NAN);
  };
  // Each round runs both parts on each side, in the order seen then never-seen on even rounds and the
  // other way on odd ones: whatever the machine does to the first batch after the refill, or to the one
  // that follows another side's, falls on both parts alike.
  auto one_round = [&](int round) -> bool {
    for (int s = 0; s < fresh; ++s) refill(s);
    const int firsts[2] = {fresh, 0}, counts[2] = {seen, fresh};
    const int order[2][2] = {{0, 1}, {1, 0}};
    for (int part : order[round % 2]) {
      const double cpu = baseline_->cpu_seconds_total();
      const BatchOutcome b = baseline_batch(firsts[part], counts[part], long_limit());
      record(1, part, b, cpu, baseline_->cpu_seconds_total(), counts[part]);
      for (int s = firsts[part]; s < firsts[part] + counts[part]; ++s) expected_.capture(*baseline_out_, s);
    }
    for (int part : order[round % 2]) {
      const double cpu = kernel_->cpu_seconds_total();
      auto b = candidate_batch(firsts[part], counts[part], long_limit());
      if (!b) return false;
      record(0, part, *b, cpu, kernel_->cpu_seconds_total(), counts[part]);
      if (!verify_candidate(firsts[part], counts[part], part == 0 ? "a call on seen inputs" : "a call on never-seen inputs", true))
        return false;
      shortest_part = std::min(shortest_part, b->record_seconds());
    }
    return true;
  };
  // The fastest of the rounds stands for each part: load only ever slows a part down, and a kernel
  // that reuses work is fast on seen inputs and slow on new ones in every round.
  auto fastest = [](const std::vector<double>& v) {
    double best = INFINITY;
    for (double x : v)
      if (std::isfinite(x)) best = std::min(best, x);
    return best;
  };
  auto ratio = [&](int clock, int side) { return fastest(times[clock][side][1]) / fastest(times[clock][side][0]); };
  // The candidate's ratio with what the machine does to never-seen content taken out, as the baseline
  // (an honest kernel, on the same inputs) shows it. That cost may scale with the kernel's time (a
  // slower core while new pages come in) or be a fixed amount a call (page and cache-line misses on
  // the same input bytes): dividing by the baseline's ratio is exact for the first, subtracting its
  // extra time a call for the second. Each over-corrects where the other is exact, and an over-
  // correction can only clear a kernel, while an under-correction can condemn an honest one: so the
  // smaller of the two stands. (Dividing alone condemned an honest kernel 4x faster than the baseline
  // when new content cost the baseline one call's time more: 5x against 2x, 2.5x relative.)
  auto corrected = [](double cand_seen, double cand_new, double base_seen, double base_new) {
    const double divided = (cand_new / cand_seen) / std::max(1.0, base_new / base_seen);
    const double subtracted = std::max(0.0, cand_new - std::max(0.0, base_new - base_seen)) / cand_seen;
    return std::min(divided, subtracted);
  };
  auto relative = [&](int clock) {
    return corrected(fastest(times[clock][0][0]), fastest(times[clock][0][1]), fastest(times[clock][1][0]), fastest(times[clock][1][1]));
  };
  // A round is over the limit when its own relative ratio is, on the time of record and (where the
  // target has one) on the CPU clock. A reusing kernel is over in nearly every round; an honest one
  // beside a load that takes its cores is over in some rounds at random (a 2-thread kernel whose
  // partner thread lost its core waits on both clocks), so the verdict needs most rounds over.
  // Over `limit` on the time of record and, where there is one, on the CPU clock (a CPU reading
  // that is missing does not clear the kernel). `rel(clock)` is the relative ratio on that clock.
  auto over_on_both_clocks = [&](auto rel, double limit) {
    if (!(rel(0) > limit)) return false;
    if (!cpu_clock) return true;
    const double cpu = rel(1);
    return !std::isfinite(cpu) || cpu > limit;
  };
  auto round_over = [&](int round) {
    auto rel = [&](int clock) {
      const size_t r = size_t(round);
      return corrected(times[clock][0][0][r], times[clock][0][1][r], times[clock][1][0][r], times[clock][1][1][r]);
    };
    return over_on_both_clocks(rel, kFreshSlowdownLimit);
  };
  auto rounds_over = [&] {
    int n = 0;
    for (size_t r = 0; r < times[0][0][0].size(); ++r) n += round_over(int(r));
    return n;
  };
  auto strongly_over = [&] { return over_on_both_clocks(relative, kFreshStrongLimit); };
  auto over_limit = [&] {
    const int n = int(times[0][0][0].size());
    return n > 0 && (rounds_over() * 5 >= n * 4 || strongly_over());  // at least 80% of the rounds, or far over in the fastest
  };
  // The baseline is honest: on a machine that measures fairly its two parts take the same time a call.
  // Far from that, the machine (not the kernels) decided the reading, and a kernel it does not find
  // over the limit is not thereby cleared.
  auto baseline_skewed = [&] {
    const double b = ratio(0, 1);
    return !(b <= kFreshBaselineBand && b >= 1 / kFreshBaselineBand);
  };
  int rounds = 0;
  for (; rounds < kFreshRounds; ++rounds)
    if (!one_round(rounds)) return false;
  // Near the limit, or on a skewed reading: as many rounds again before the verdict, so that one
  // unlucky stretch of a busy machine cannot call an honest kernel a cheat (a caching kernel stays
  // over the limit) nor let a caching kernel through (the fastest parts only get closer to the truth).
  if (!strongly_over() && (rounds_over() * 5 >= kFreshRounds * 3 || baseline_skewed()) &&
      seconds_left() > 2 * (baseline_call_s_ + candidate_call_s_) * sets_ * kFreshRounds)
    for (; rounds < 2 * kFreshRounds; ++rounds)
      if (!one_round(rounds)) return false;
  r_.integrity.fresh_over_repeat = ratio(0, 0);
  r_.integrity.baseline_fresh_over_repeat = ratio(0, 1);
  if (shortest_part < kFreshMinPartS) {
    r_.integrity.fresh_check = fmt::format("inconclusive: parts of {:.3f} ms are below the {:.0f} ms the timer needs", shortest_part * 1e3,
                                           kFreshMinPartS * 1e3);
    return true;
  }
  if (over_limit()) {
    r_.integrity.fresh_check = "failed";
    const std::string on_cpu =
        cpu_clock ? fmt::format("; on the worker's CPU clock {:.2f}x, the baseline {:.2f}x", ratio(1, 0), ratio(1, 1)) : std::string();
    return finish(Status::untrusted,
                  fmt::format("on never-seen inputs the kernel took {:.2f}x its time per call on inputs it had seen (the fastest "
                              "of {} rounds each; the baseline {:.2f}x{}; over {:.0f}x relative to it in {} of the {} rounds{}): it "
                              "reuses work across calls",
                              r_.integrity.fresh_over_repeat, rounds, r_.integrity.baseline_fresh_over_repeat, on_cpu,
                              kFreshSlowdownLimit, rounds_over(), rounds,
                              strongly_over() ? fmt::format(", over {:.0f}x in the fastest", kFreshStrongLimit) : std::string()));
  }
  if (baseline_skewed()) {
    r_.integrity.fresh_check =
        fmt::format("inconclusive: the baseline took {:.2f}x its time per call on never-seen inputs (the fastest of {} rounds each), "
                    "outside [{:.2f}, {:.2f}]: the machine skewed the reading",
                    r_.integrity.baseline_fresh_over_repeat, rounds, 1 / kFreshBaselineBand, kFreshBaselineBand);
    return true;
  }
  r_.integrity.fresh_check = "passed";
  return true;
}

// 8. What the measurements say about themselves: physically impossible times, more threads than
// allowed, clocks that disagree. These change the status or the speedup's standing.
void EvaluationSession::verdicts() {
  if (!r_.timing || !r_.speedup) return;
  TimingInfo& t = *r_.timing;
  SpeedupInfo& sp = *r_.speedup;
  // Roofline floor: the least work any input needs (floor_flops, floor_bytes: the useful FLOPs and
  // minimum bytes unless the work depends on drawn values) at peak compute and peak bandwidth.
  const RoofTime floor = time_at_roofs(w_->floor_flops, w_->floor_bytes, options_.peak_flops_per_s, options_.peak_bytes_per_s);
  const double compute_floor = floor.compute_s, memory_floor = floor.memory_s, floor_s = floor.seconds();
  r_.integrity.roofline_floor_ms = floor_s * 1e3;
  const double median_s = t.per_call_ms.median * 1e-3;
  if (floor_s > 0 && median_s < floor_s) {
    t.flags.push_back("below_roofline_floor");
    if (median_s < kRooflineUntrustedShare * floor_s) {
      finish(Status::untrusted,
             fmt::format("the median call took {:.4g} ms, under half the roofline floor of {:.4g} ms on this machine ({} at peak "
                         "compute, {} at peak bandwidth): no honest kernel runs that fast",
                         t.per_call_ms.median, floor_s * 1e3, fmt::format("{:.4g} ms", compute_floor * 1e3),
                         fmt::format("{:.4g} ms", memory_floor * 1e3)));
      return;
    }
  }
  // Thread use: CPU time from outside the worker against threads x the wall time it ran. Judged on
  // the faster half of the timed batches, the ones the median speedup comes from: a kernel cannot buy
  // CPU allowance there with long sleeps (sleeping batches are slow and fall out), and an honest
  // kernel whose batches are bimodal under load (some several times slower, all of them busy) is not
  // held to the median call times the calls. A sum over those batches rather than a per-batch ratio:
  // a batch of a few milliseconds reads the CPU clock to within a scheduler tick only.
  // (Not on a device timer: the GPU worker's CPU waits on the device and copies tensors, and its
  // kernels' threads are not the CPU's.)
  if (kernel_->capabilities().cpu_time_accounting && !kernel_->capabilities().device_timer && candidate_cpu_at_launch_ >= 0) {
    const double cpu = kernel_->cpu_seconds_total() - candidate_cpu_at_launch_;
    r_.integrity.worker_cpu_s = cpu;
    // i11: the baseline's CPU, and the candidate's CPU against threads x the wall time of its requests.
    if (baseline_) r_.integrity.baseline_worker_cpu_s = baseline_->cpu_seconds_total();
    const double wall = kernel_->busy_seconds_total();
    if (wall > 0) r_.integrity.cpu_over_threads_wall = cpu / (threads_ * wall);
    const FastHalfUse timed = fast_half_cpu_use(timed_batch_cpu_s_, timed_batch_wall_s_);
    if (timed.wall_s > 0) r_.integrity.timed_cpu_over_threads_wall = timed.cpu_s / (threads_ * timed.wall_s);
    // Over the whole evaluation too, against every request's wall: CPU used outside the requests
    // (a target that cannot freeze the idle worker) shows there.
    struct Span {
      double cpu_s, wall_s;
      const char* what;
    };
    for (const Span& span : {Span{timed.cpu_s, timed.wall_s, "in the faster half of its timed batches"},
                             Span{cpu, wall, "over the evaluation's requests"}}) {
      if (span.wall_s > 0.05 && span.cpu_s > kThreadOveruse * threads_ * span.wall_s + 0.05) {
        finish(Status::untrusted, fmt::format("the worker used {:.2f} s of CPU in {:.2f} s of calls {} with {} thread(s): it ran more "
                                              "threads than it was given",
                                              span.cpu_s, span.wall_s, span.what, threads_));
        return;
      }
    }
  }
  // The speedup's standing: the figure of record is the parent's clock; a worker clock that
  // disagrees, or precision not reached, makes the speedup something to read with care, and
  // rankings leave out what is not "ok".
  std::vector<std::string> why;
  for (const auto& flag : t.flags) {
    if (flag == "parent_worker_clock_disagree")
      why.push_back(fmt::format("the parent's and the worker's clocks disagree ({:.3f})", t.parent_over_worker));
    if (flag == "below_roofline_floor") why.push_back("faster than the roofline floor");
    if (flag == "device_time_unexplained")
      why.push_back("the parent's clock holds more beyond the device's events for the candidate than for the baseline");
    if (flag == "work_outside_stream") why.push_back("the device stayed busy after the events on the harness stream ended");
  }
  if (!why.empty()) {
    sp.standing = "unreliable";
    sp.standing_reason = fmt::format("{}", fmt::join(why, "; "));
  } else if (std::find(t.flags.begin(), t.flags.end(), "precision_not_reached") != t.flags.end()) {
    sp.standing = "imprecise";
    sp.standing_reason = fmt::format("the time cap came before the target precision (95% interval [{:.3f}, {:.3f}])", sp.ci95_low, sp.ci95_high);
  }
}

}  // namespace opbench
