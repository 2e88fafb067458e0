#include "harness/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/compare.h"
#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/machine.h"
#include "core/rng.h"
#include "workload/inputs.h"

namespace opbench {
namespace {

using Clock = std::chrono::steady_clock;


std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

// NaN in every float lane, an unlikely value in every int lane: a kernel that skips an element
// leaves this behind and fails the comparison.
void poison(BufferSet& outputs, int set) {
  for (int t = 0; t < outputs.tensors(); ++t) {
    uint32_t* words = reinterpret_cast<uint32_t*>(outputs.data(set, t));
    size_t n = outputs.bytes(t) / 4;
    std::fill(words, words + n, 0x7FC07FC0u);
    if (outputs.bytes(t) % 4) std::memset(reinterpret_cast<std::byte*>(words + n), 0xFF, outputs.bytes(t) % 4);
  }
}

uint64_t input_hash(BufferSet& inputs, int set) {
  uint64_t h = 0;
  for (int t = 0; t < inputs.tensors(); ++t) h = h * 31 + xxh3_64(inputs.data(set, t), inputs.bytes(t));
  return h;
}

// The baseline's outputs, copied out of shared memory into the parent's own: the only place the
// expected answers live while a candidate runs.
class ExpectedOutputs {
 public:
  ExpectedOutputs(int sets, int tensors) : tensors_(tensors), data_(size_t(sets) * size_t(tensors)) {}
  void capture(BufferSet& from, int set) {
    for (int t = 0; t < tensors_; ++t) {
      const std::byte* p = from.data(set, t);
      data_[index(set, t)].assign(p, p + from.bytes(t));
    }
  }
  const std::byte* at(int set, int t) const { return data_[index(set, t)].data(); }

 private:
  size_t index(int set, int t) const { return size_t(set) * size_t(tensors_) + size_t(t); }
  int tensors_;
  std::vector<std::vector<std::byte>> data_;
};

// Checks set `set` of the candidate: values against the expected outputs, canaries, inputs intact.
// Returns an empty string when it passes, else the reason.
std::string verify_set(const ResolvedWorkload& w, BufferSet& inputs, const ExpectedOutputs& expected, BufferSet& got, int set,
                       uint64_t input_hash_before, CorrectnessInfo* info) {
  std::string damaged;
  if (!got.canaries_intact(set, &damaged)) return "the kernel wrote past the end of output " + damaged;
  if (!inputs.canaries_intact(set, &damaged)) return "the kernel wrote past the end of input " + damaged;
  if (input_hash(inputs, set) != input_hash_before) return "the kernel modified its inputs";
  std::string reason;
  for (int t = 0; t < got.tensors(); ++t) {
    const auto& tensor = w.outputs[size_t(t)];
    Comparison c = compare_tensors(got.data(set, t), expected.at(set, t), tensor.numel(), tensor.dtype, w.tolerance);
    info->elements_checked += c.elements;
    info->mismatches += c.mismatches;
    info->non_finite += c.non_finite;
    info->max_abs_err = std::max(info->max_abs_err, c.max_abs_err);
    info->max_rel_err = std::max(info->max_rel_err, c.max_rel_err);
    if (!c.passed() && reason.empty()) {
      reason = fmt::format("output {}: {} of {} elements outside atol {:g} + rtol {:g}·|expected|{}; first at index {}: got {:g}, expected {:g}",
                           tensor.name, c.mismatches, c.elements, w.tolerance.atol, w.tolerance.rtol,
                           c.non_finite ? fmt::format(" ({} NaN or Inf)", c.non_finite) : std::string(),
                           c.first_mismatch, c.first_got, c.first_expected);
    }
  }
  return reason;
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

// A candidate this much slower per call on never-seen inputs than on inputs it has seen, relative to
// the baseline's ratio in the same round, in the median of the rounds, is reusing work across calls.
// Caching kernels show 5-40x; honest ones measured up to 1.6x (median) on a busy machine.
constexpr double kFreshSlowdownLimit = 2.0;
constexpr int kFreshRounds = 5;

Status status_of(const BatchOutcome& b) {
  switch (b.kind) {
    case BatchOutcome::Kind::timed_out: return Status::timeout;
    default: return Status::runtime_error;
  }
}

}  // namespace

int default_thread_count() { return std::max(1, machine_info().logical_cpus); }

// Enough sets that one pass over them is twice the last-level cache, so no call finds its data warm
// from an earlier one; and, where they fit in 256 MiB, more: a batch never runs a set twice (so that
// every call's outputs can be checked), and more sets mean longer batches for short calls. Trials
// beyond the number of sets refill a set with a new seed, so large workloads do not hold `trials` copies.
int rotation_sets(const ResolvedWorkload& w) {
  const double per_set = std::max(double(w.input_bytes() + w.output_bytes()), 1.0);
  const double for_cache = std::ceil(2.0 * double(machine_info().llc_bytes) / per_set);
  const double for_batches = std::floor(double(256u << 20) / per_set);
  return int(std::clamp(std::max(for_cache, for_batches), 2.0, 64.0));
}

void fill_input_set(const ResolvedWorkload& w, BufferSet& inputs, int set, uint64_t seed) {
  for (size_t t = 0; t < w.inputs.size(); ++t) fill_input(inputs.data(set, int(t)), w.inputs[t], seed, t, default_thread_count());
}

Implementation builtin_implementation(const WorkloadSpec& spec, const std::string& kind) {
  if (kind != "reference" && kind != "baseline" && kind != "expert")
    throw UsageError(fmt::format("unknown implementation '{}' (use reference, baseline or expert)", kind));
  if (!spec.has_implementation(kind))
    throw UsageError(fmt::format("{} has no {} implementation ({} not found)", spec.id, kind, spec.implementation(kind).string()));
  return Implementation{kind, spec.implementation(kind), {}};
}

Result evaluate(const WorkloadSpec& spec, const Implementation& candidate, Target& target, const EvalOptions& options) {
  const auto eval_start = Clock::now();
  auto say = [&](const std::string& s) {
    if (options.progress) options.progress(s);
  };
  const ResolvedWorkload w = resolve_workload(spec, options.size, options.overrides, target.float_dtype());
  const int threads = options.threads > 0 ? options.threads : default_thread_count();

  Result r;
  r.workload = spec.id;
  r.size = options.size;
  r.target = target.name();
  for (const auto& [k, v] : w.symbols)
    if (k != "elem") r.shape[k] = v;
  r.impl = {candidate.kind, std::filesystem::absolute(candidate.source).string(), sha256_hex(read_file(candidate.source))};
  r.threads = threads;
  r.machine = to_json(machine_info());
  r.timestamp = now_iso8601();
  r.correctness.atol = w.tolerance.atol;
  r.correctness.rtol = w.tolerance.rtol;
  r.work.flops = w.flops;
  r.work.useful_flops = w.useful_flops;
  r.work.bytes = w.min_bytes;
  r.work.intensity = w.intensity();
  auto finish = [&](Status s, const std::string& message) {
    r.status = s;
    r.message = message;
    if (s != Status::correct && r.correctness.reason.empty()) r.correctness.reason = message;
    r.eval_s = std::chrono::duration<double>(Clock::now() - eval_start).count();
    return r;
  };

  // 1. Build both sides. The baseline is trusted and may link the vendor libraries.
  say("building");
  const Implementation baseline_impl = builtin_implementation(spec, "baseline");
  BuildOutcome baseline_build = target.build({baseline_impl.source, "baseline", true, {}});
  if (!baseline_build.ok)
    throw std::runtime_error(fmt::format("the baseline of {} does not build:\n{}", spec.id, baseline_build.log));
  BuildOutcome build = target.build({candidate.source, candidate.kind, candidate.trusted(), candidate.defines});
  r.build_s = build.seconds;
  r.build_cached = build.cached;
  r.compiler = build.compiler;
  r.build_log = build.log.size() > 8000 ? build.log.substr(0, 8000) + "\n...(truncated)" : build.log;
  if (!build.ok) return finish(Status::compile_error, "the kernel did not compile; see build.log");
  if (!candidate.trusted()) {
    const std::string refusal = target.vet(build);
    if (!refusal.empty()) return finish(Status::rejected, refusal);
  }

  // 2. Fresh secret inputs, one seed per set; they never leave this process.
  const int sets = rotation_sets(w);
  say(fmt::format("generating {} input sets", sets));
  auto inputs = target.allocate(w.inputs, sets, "inputs");
  auto baseline_out = target.allocate(w.outputs, sets, "baseline-outputs");
  auto got = target.allocate(w.outputs, sets, "candidate-outputs");
  ExpectedOutputs expected(sets, int(w.outputs.size()));
  std::vector<uint64_t> hashes(static_cast<size_t>(sets));
  auto refill = [&](int s) {
    fill_input_set(w, *inputs, s, fresh_secret_seed());
    hashes[size_t(s)] = input_hash(*inputs, s);
  };
  for (int s = 0; s < sets; ++s) refill(s);
  auto poison_batch = [&](BufferSet& outputs, int first, int calls) {
    for (int i = 0; i < calls; ++i) poison(outputs, (first + i) % sets);
  };

  // 3. Expected outputs: the baseline on every set (this is also its warm-up). The baseline runs in
  // the same sandbox as the candidate so that both are timed under the same conditions.
  LaunchOptions launch_options;
  launch_options.threads = threads;
  launch_options.sandbox = options.sandbox;
  LaunchOutcome baseline_launch = target.launch(baseline_build, *inputs, *baseline_out, launch_options);
  if (!baseline_launch.runner) throw std::runtime_error("the baseline did not load: " + baseline_launch.reason);
  KernelRunner& baseline = *baseline_launch.runner;
  say("computing expected outputs");
  const auto long_limit = std::chrono::milliseconds(int64_t(std::max(600.0, options.timing.call_timeout_s * sets) * 1000));
  auto baseline_batch = [&](int first, int calls) {
    poison_batch(*baseline_out, first, calls);
    BatchOutcome b = baseline.prepare(first, calls);
    if (b.ok()) b = baseline.run(first, calls, long_limit);
    if (!b.ok()) throw std::runtime_error("the baseline failed: " + b.detail);
    for (int i = 0; i < calls; ++i) {
      const int s = (first + i) % sets;
      if (input_hash(*inputs, s) != hashes[size_t(s)]) throw std::runtime_error("the baseline modified its inputs");
    }
    return b;
  };
  BatchOutcome expected_run = baseline_batch(0, sets);
  for (int s = 0; s < sets; ++s) expected.capture(*baseline_out, s);

  // 4. The candidate: load, then one checked call per trial set.
  LaunchOutcome launch = target.launch(build, *inputs, *got, launch_options);
  r.sandbox = launch.runner ? launch.runner->describe_sandbox() : "";
  if (!launch.runner) {
    Status s = launch.failure == LaunchOutcome::Failure::rejected ? Status::rejected
               : launch.failure == LaunchOutcome::Failure::timed_out ? Status::timeout
                                                                     : Status::runtime_error;
    return finish(s, launch.reason);
  }
  KernelRunner& kernel = *launch.runner;
  auto kernel_failed = [&](const BatchOutcome& b) {
    r.kernel_output = kernel.output_log();
    return finish(status_of(b), b.detail);
  };

  // Every candidate batch: outputs poisoned and only its own sets exposed before; after, every
  // call's outputs checked and the worker watched for work it left running. The first failure is kept.
  std::optional<std::pair<Status, std::string>> check_failure;
  std::optional<BatchOutcome> prepare_failure;
  auto candidate_before = [&](int first, int calls) {
    poison_batch(*got, first, calls);
    BatchOutcome b = kernel.prepare(first, calls);
    if (!b.ok()) prepare_failure = b;
    return b.ok();
  };
  std::mt19937_64 watch_draw(fresh_secret_seed());
  auto candidate_after = [&](int first, int calls, const std::string& context, bool watch) {
    for (int i = 0; i < calls; ++i) {
      const int s = (first + i) % sets;
      std::string reason = verify_set(w, *inputs, expected, *got, s, hashes[size_t(s)], &r.correctness);
      ++r.integrity.calls_verified;
      if (!reason.empty()) {
        check_failure = {Status::incorrect, fmt::format("{}: {}", context, reason)};
        return false;
      }
    }
    if (!watch) return true;
    std::this_thread::sleep_for(kIdleSettle);
    const double settled = kernel.cpu_seconds_since_reply();
    std::this_thread::sleep_for(kIdleWatch);
    const double later = kernel.cpu_seconds_since_reply();
    if (settled >= 0 && later >= 0) {
      r.integrity.max_idle_cpu_ms = std::max(r.integrity.max_idle_cpu_ms, (later - settled) * 1e3);
      ++r.integrity.batches_watched;
      if (later - settled > kIdleQuietLimitS) {
        check_failure = {Status::untrusted,
                         fmt::format("{}: the worker used {:.2f} ms of CPU in a {} ms window starting {} ms after ob_run "
                                     "returned (work left running in the background)",
                                     context, (later - settled) * 1e3, kIdleWatch.count(), kIdleSettle.count())};
        return false;
      }
    }
    return true;
  };
  auto check_failed = [&]() {
    r.kernel_output = kernel.output_log();
    if (check_failure->first == Status::incorrect) r.correctness.reason = check_failure->second;
    return finish(check_failure->first, check_failure->second);
  };

  const auto call_limit = std::chrono::milliseconds(int64_t(options.timing.call_timeout_s * 1000));
  double fastest_call = INFINITY;
  r.correctness.trials = options.trials;
  for (int trial = 0; trial < options.trials; ++trial) {
    say(fmt::format("correctness trial {}/{}", trial + 1, options.trials));
    const int set = trial % sets;
    if (trial >= sets) {  // a fresh seed for this trial, and the baseline's answer for it
      refill(set);
      baseline_batch(set, 1);
      expected.capture(*baseline_out, set);
    }
    if (!candidate_before(set, 1)) return kernel_failed(*prepare_failure);
    BatchOutcome b = kernel.run(set, 1, call_limit);
    if (!b.ok()) return kernel_failed(b);
    fastest_call = std::min(fastest_call, b.parent_seconds);
    if (!candidate_after(set, 1, fmt::format("trial {}", trial + 1), true)) return check_failed();
    ++r.correctness.passed;
  }

  // 5. Paired timing against the baseline; every timed call's outputs are checked after its batch.
  if (options.time) {
    say("timing");
    TimedSide base_side, cand_side;
    base_side.runner = &baseline;
    base_side.estimated_call_s = expected_run.parent_seconds / sets;
    base_side.before_batch = [&](int first, int calls) {
      // The same treatment as the candidate's outputs, so neither side finds its outputs warmer.
      poison_batch(*baseline_out, first, calls);
      return baseline.prepare(first, calls).ok();
    };
    cand_side.runner = &kernel;
    cand_side.estimated_call_s = fastest_call;
    cand_side.before_batch = candidate_before;
    cand_side.after_batch = [&](int first, int calls) {
      const bool watch = std::uniform_real_distribution<double>(0, 1)(watch_draw) < kWatchShare;
      return candidate_after(first, calls, "a timed call", watch);
    };
    PairedTiming pt = measure_paired(base_side, cand_side, sets, options.timing, options.progress);
    if (pt.candidate_failed) {
      if (pt.stopped_by_check) return check_failure ? check_failed() : kernel_failed(*prepare_failure);
      return kernel_failed(pt.failure);
    }
    TimingInfo t;
    std::vector<double> ms, worker_ms, base_ms, clock_ratio;
    for (size_t i = 0; i < cand_side.per_call_s.size(); ++i) {
      ms.push_back(cand_side.per_call_s[i] * 1e3);
      worker_ms.push_back(cand_side.worker_per_call_s[i] * 1e3);
      if (cand_side.worker_per_call_s[i] > 0) clock_ratio.push_back(cand_side.per_call_s[i] / cand_side.worker_per_call_s[i]);
    }
    for (double s : base_side.per_call_s) base_ms.push_back(s * 1e3);
    t.per_call_ms = summarize(ms);
    t.calls = cand_side.calls;
    t.batches = ms.size();
    t.worker_median_ms = summarize(worker_ms).median;
    t.parent_over_worker = summarize(clock_ratio).median;
    t.baseline_per_call_ms = summarize(base_ms);
    t.baseline_calls = base_side.calls;
    t.seconds = pt.seconds;
    t.stop_reason = pt.stop_reason;
    // The parent's clock is the figure of record; a large gap to the worker's own clock means time
    // spent outside the calls (process start-up, paging) or a worker that misreports.
    if (t.parent_over_worker > 1.05 || t.parent_over_worker < 0.95) t.flags.push_back("parent_worker_clock_disagree");
    if (pt.stop_reason == "time_cap") t.flags.push_back("precision_not_reached");
    const RatioEstimate& ratio = pt.estimate;
    t.outlier_pairs = pt.outlier_pairs;
    r.speedup = SpeedupInfo{ratio.geomean, ratio.ci95_low, ratio.ci95_high,
                            t.baseline_per_call_ms.median / t.per_call_ms.median, ratio.count};
    r.timing = t;
    const double seconds = t.per_call_ms.median * 1e-3;
    r.work.gflops_per_s = w.useful_flops / seconds * 1e-9;
    r.work.gbytes_per_s = w.min_bytes / seconds * 1e-9;

    // 6. Never-seen inputs. The first half of the sets is refilled in place (same addresses, new
    // contents); each side then runs the other half (data it has seen) and right after it the
    // refilled half. A kernel that remembers results by address returns stale outputs; one that
    // remembers them by content is slower on the new half than on the old, where an honest kernel
    // is not. The baseline's ratio is the yardstick; three rounds, medians.
    say("checking on never-seen inputs");
    const int fresh = std::max(1, sets / 2), seen = sets - fresh;
    std::vector<double> cand_ratios, base_ratios;
    for (int round = 0; round < kFreshRounds && seen > 0; ++round) {
      for (int s = 0; s < fresh; ++s) refill(s);
      const double base_seen = baseline_batch(fresh, seen).parent_seconds / seen;
      const double base_new = baseline_batch(0, fresh).parent_seconds / fresh;
      for (int s = 0; s < fresh; ++s) expected.capture(*baseline_out, s);
      double cand_time[2];
      const int firsts[2] = {fresh, 0}, counts[2] = {seen, fresh};
      for (int part = 0; part < 2; ++part) {
        if (!candidate_before(firsts[part], counts[part])) return kernel_failed(*prepare_failure);
        BatchOutcome b = kernel.run(firsts[part], counts[part], long_limit);
        if (!b.ok()) return kernel_failed(b);
        if (!candidate_after(firsts[part], counts[part], part == 0 ? "a call on seen inputs" : "a call on never-seen inputs", true))
          return check_failed();
        cand_time[part] = b.parent_seconds / counts[part];
      }
      cand_ratios.push_back(cand_time[1] / cand_time[0]);
      base_ratios.push_back(base_new / base_seen);
    }
    if (!cand_ratios.empty()) {
      r.integrity.fresh_over_repeat = summarize(cand_ratios).median;
      r.integrity.baseline_fresh_over_repeat = summarize(base_ratios).median;
      // Each round's ratio is taken relative to the baseline's in the same round, and the median of
      // those decides: one disturbed round (a caching kernel's seen half is short, so a stall there
      // hides it; a stall in an honest kernel's new half inflates it) does not.
      std::vector<double> relative;
      for (size_t i = 0; i < cand_ratios.size(); ++i) relative.push_back(cand_ratios[i] / std::max(1.0, base_ratios[i]));
      if (summarize(relative).median > kFreshSlowdownLimit) {
        r.kernel_output = kernel.output_log();
        return finish(Status::untrusted,
                      fmt::format("on never-seen inputs the kernel took {:.2f}x its time per call on inputs it had seen (median of "
                                  "{} rounds; the baseline {:.2f}x; over {:.0f}x relative to it): it reuses work across calls, so its "
                                  "timing does not stand for new data",
                                  r.integrity.fresh_over_repeat, cand_ratios.size(), r.integrity.baseline_fresh_over_repeat,
                                  kFreshSlowdownLimit));
      }
    }
  }
  r.kernel_output = kernel.output_log();
  return finish(Status::correct, "");
}

SingleRun run_once(const ResolvedWorkload& w, const Implementation& impl, Target& target, uint64_t seed, int threads) {
  BuildOutcome build = target.build({impl.source, impl.kind, impl.trusted(), impl.defines});
  if (!build.ok) throw std::runtime_error(fmt::format("{} did not compile:\n{}", impl.source.string(), build.log));
  SingleRun run;
  run.inputs = target.allocate(w.inputs, 1, "inputs");
  run.outputs = target.allocate(w.outputs, 1, "outputs");
  fill_input_set(w, *run.inputs, 0, seed);
  poison(*run.outputs, 0);
  LaunchOptions options;
  options.threads = threads;
  LaunchOutcome launch = target.launch(build, *run.inputs, *run.outputs, options);
  if (!launch.runner) throw std::runtime_error(fmt::format("{} did not load: {}", impl.source.string(), launch.reason));
  BatchOutcome b = launch.runner->run(0, 1, std::chrono::hours(1));
  if (!b.ok()) throw std::runtime_error(fmt::format("{} failed: {}", impl.source.string(), b.detail));
  return run;
}

}  // namespace opbench
