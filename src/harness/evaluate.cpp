#include "harness/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

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

// Checks set `set` of the candidate: values against the expected outputs, canaries, inputs intact.
// Returns an empty string when it passes, else the reason.
std::string verify_set(const ResolvedWorkload& w, BufferSet& inputs, BufferSet& expected, BufferSet& got, int set,
                       uint64_t input_hash_before, CorrectnessInfo* info) {
  std::string damaged;
  if (!got.canaries_intact(set, &damaged)) return "the kernel wrote past the end of output " + damaged;
  if (!inputs.canaries_intact(set, &damaged)) return "the kernel wrote past the end of input " + damaged;
  if (input_hash(inputs, set) != input_hash_before) return "the kernel modified its inputs";
  std::string reason;
  for (int t = 0; t < got.tensors(); ++t) {
    const auto& tensor = w.outputs[size_t(t)];
    Comparison c = compare_tensors(got.data(set, t), expected.data(set, t), tensor.numel(), tensor.dtype, w.tolerance);
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

Status status_of(const BatchOutcome& b) {
  switch (b.kind) {
    case BatchOutcome::Kind::timed_out: return Status::timeout;
    default: return Status::runtime_error;
  }
}

}  // namespace

int default_thread_count() { return std::max(1, machine_info().logical_cpus); }

// Enough sets that one pass over them is twice the last-level cache, so no call finds its data warm
// from an earlier one. Trials beyond the number of sets refill a set with a new seed, so large
// workloads do not hold `trials` copies.
int rotation_sets(const ResolvedWorkload& w) {
  const double per_set = double(w.input_bytes() + w.output_bytes());
  const double want = 2.0 * double(machine_info().llc_bytes);
  return std::clamp(int(std::ceil(want / std::max(per_set, 1.0))), 2, 64);
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
  auto expected = target.allocate(w.outputs, sets, "baseline-outputs");
  auto got = target.allocate(w.outputs, sets, "candidate-outputs");
  std::vector<uint64_t> hashes(static_cast<size_t>(sets));
  auto refill = [&](int s) {
    fill_input_set(w, *inputs, s, fresh_secret_seed());
    hashes[size_t(s)] = input_hash(*inputs, s);
  };
  for (int s = 0; s < sets; ++s) refill(s);

  // 3. Expected outputs: the baseline on every set (this is also its warm-up).
  LaunchOptions launch_options;
  launch_options.threads = threads;
  LaunchOutcome baseline_launch = target.launch(baseline_build, *inputs, *expected, launch_options);
  if (!baseline_launch.runner) throw std::runtime_error("the baseline did not load: " + baseline_launch.reason);
  KernelRunner& baseline = *baseline_launch.runner;
  say("computing expected outputs");
  const auto long_limit = std::chrono::milliseconds(int64_t(std::max(600.0, options.timing.call_timeout_s * sets) * 1000));
  BatchOutcome expected_run = baseline.run(0, sets, long_limit);
  if (!expected_run.ok()) throw std::runtime_error("the baseline failed: " + expected_run.detail);
  for (int s = 0; s < sets; ++s) {
    if (input_hash(*inputs, s) != hashes[size_t(s)]) throw std::runtime_error("the baseline modified its inputs");
  }

  // 4. The candidate: load, then one checked call per trial set.
  LaunchOutcome launch = target.launch(build, *inputs, *got, launch_options);
  r.sandbox = launch.runner ? launch.runner->describe_sandbox() : "none (process isolation only)";
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
  const auto call_limit = std::chrono::milliseconds(int64_t(options.timing.call_timeout_s * 1000));
  double fastest_call = INFINITY;
  r.correctness.trials = options.trials;
  for (int trial = 0; trial < options.trials; ++trial) {
    say(fmt::format("correctness trial {}/{}", trial + 1, options.trials));
    const int set = trial % sets;
    if (trial >= sets) {  // a fresh seed for this trial, and the baseline's answer for it
      refill(set);
      BatchOutcome e = baseline.run(set, 1, long_limit);
      if (!e.ok()) throw std::runtime_error("the baseline failed: " + e.detail);
    }
    poison(*got, set);
    BatchOutcome b = kernel.run(set, 1, call_limit);
    if (!b.ok()) return kernel_failed(b);
    fastest_call = std::min(fastest_call, b.parent_seconds);
    std::string reason = verify_set(w, *inputs, *expected, *got, set, hashes[size_t(set)], &r.correctness);
    if (!reason.empty()) {
      r.kernel_output = kernel.output_log();
      r.correctness.reason = fmt::format("trial {}: {}", trial + 1, reason);
      return finish(Status::incorrect, r.correctness.reason);
    }
    ++r.correctness.passed;
  }

  // 5. Paired timing against the baseline, then the timed calls' outputs are checked again.
  if (options.time) {
    say("timing");
    for (int s = 0; s < sets; ++s) poison(*got, s);
    TimedSide base_side, cand_side;
    base_side.runner = &baseline;
    base_side.estimated_call_s = expected_run.parent_seconds / sets;
    cand_side.runner = &kernel;
    cand_side.estimated_call_s = fastest_call;
    PairedTiming pt = measure_paired(base_side, cand_side, sets, options.timing, options.progress);
    if (pt.candidate_failed) return kernel_failed(pt.failure);
    for (int s = 0; s < sets; ++s) {
      if (!cand_side.sets_written[size_t(s)]) continue;
      CorrectnessInfo timed;
      std::string reason = verify_set(w, *inputs, *expected, *got, s, hashes[size_t(s)], &timed);
      if (!reason.empty()) {
        r.kernel_output = kernel.output_log();
        r.correctness.reason = "a timed call: " + reason;
        r.correctness.mismatches += timed.mismatches;
        return finish(Status::incorrect, r.correctness.reason);
      }
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
