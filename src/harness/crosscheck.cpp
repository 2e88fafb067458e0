#include "harness/crosscheck.h"

#include <chrono>

#include <fmt/format.h>

#include "core/error.h"
#include "workload/inputs.h"

namespace opbench {
namespace {

struct Loaded {
  BuildOutcome build;
  std::unique_ptr<BufferSet> inputs, outputs;
  std::unique_ptr<KernelRunner> runner;
  std::string failure;
};

Loaded load(Target& target, const Implementation& impl, const ResolvedWorkload& w) {
  Loaded l;
  // Only a baseline links the vendor libraries: the reference is plain C++, so a machine without
  // OpenBLAS or oneDNN (the GPU machine) can still build it.
  l.build = target.build({impl.source, impl.kind, impl.kind == "baseline", impl.defines, {}});
  if (!l.build.ok) {
    l.failure = fmt::format("{} did not compile: {}", impl.source.filename().string(), l.build.log.substr(0, 2000));
    return l;
  }
  if (!impl.trusted())
    if (std::string refusal = target.vet(l.build); !refusal.empty()) {
      l.failure = "rejected: " + refusal;
      return l;
    }
  l.inputs = target.allocate(w.inputs, 1, "inputs");
  l.outputs = target.allocate(w.outputs, 1, impl.kind + "-outputs");
  LaunchOptions options;
  options.threads = default_thread_count();
  LaunchOutcome launched = target.launch(l.build, *l.inputs, *l.outputs, options);
  if (!launched.runner) l.failure = fmt::format("{} did not load: {}", impl.source.filename().string(), launched.reason);
  l.runner = std::move(launched.runner);
  return l;
}

std::string run_call(Loaded& l) {
  l.outputs->poison(0);
  BatchOutcome b = l.runner->prepare(0, 1, std::chrono::minutes(10));
  if (b.ok()) b = l.runner->run(0, 1, std::chrono::minutes(10));
  return b.ok() ? std::string() : b.detail;
}

}  // namespace

CrossCheckResult cross_check(const WorkloadSpec& spec, const Implementation& impl, Target& target, Target& reference_target,
                             const std::string& size, int trials, uint64_t first_seed) {
  CrossCheckResult r;
  r.workload = spec.id;
  r.impl = impl.kind;
  r.target = target.name();
  r.size = size;
  const ResolvedWorkload on_target = resolve_workload(spec, size, {}, target.float_dtype());
  const ResolvedWorkload on_reference = resolve_workload(spec, size, {}, reference_target.float_dtype());
  r.tolerance = on_target.tolerance;
  const auto start = std::chrono::steady_clock::now();
  Loaded tested = load(target, impl, on_target);
  if (!tested.failure.empty()) {
    r.message = tested.failure;
    return r;
  }
  Loaded reference = load(reference_target, builtin_implementation(spec, "reference"), on_reference);
  if (!reference.failure.empty()) {
    r.message = "the reference: " + reference.failure;
    return r;
  }
  r.passed = true;
  std::vector<std::byte> host;
  for (int trial = 0; trial < trials; ++trial) {
    CrossCheckTrial t;
    t.seed = first_seed + uint64_t(trial);
    fill_input_set(on_target, *tested.inputs, 0, t.seed);
    // The reference sees exactly the target's inputs, widened.
    for (size_t i = 0; i < on_target.inputs.size(); ++i) {
      host.resize(on_target.inputs[i].bytes());
      tested.inputs->read(0, int(i), host.data(), host.size());
      const auto wide = convert_elements(host.data(), on_target.inputs[i].numel(), on_target.inputs[i].dtype, on_reference.inputs[i].dtype);
      reference.inputs->write(0, int(i), wide.data(), wide.size());
    }
    if (std::string e = run_call(tested); !e.empty()) {
      r.passed = false;
      r.message = fmt::format("trial {}: {} failed: {}", trial + 1, impl.kind, e);
      r.trials.push_back(t);
      break;
    }
    if (std::string e = run_call(reference); !e.empty()) throw std::runtime_error("the reference failed: " + e);
    for (size_t o = 0; o < on_target.outputs.size(); ++o) {
      const auto& out = on_target.outputs[o];
      host.resize(out.bytes());
      tested.outputs->read(0, int(o), host.data(), host.size());
      const auto got = convert_elements(host.data(), out.numel(), out.dtype, on_reference.outputs[o].dtype);
      std::vector<std::byte> expected(on_reference.outputs[o].bytes());
      reference.outputs->read(0, int(o), expected.data(), expected.size());
      const Comparison c = compare_tensors(got.data(), expected.data(), out.numel(), on_reference.outputs[o].dtype, on_target.tolerance);
      if (!c.passed() && t.reason.empty())
        t.reason = fmt::format("output {}: {} of {} elements outside atol {:g} + rtol {:g}·|expected|; first at index {}: got {:g}, expected {:g}",
                               out.name, c.mismatches, c.elements, on_target.tolerance.atol, on_target.tolerance.rtol, c.first_mismatch,
                               c.first_got, c.first_expected);
      t.comparison.merge(c);
    }
    if (!t.reason.empty()) {
      r.passed = false;
      if (r.message.empty()) r.message = fmt::format("trial {}: {}", trial + 1, t.reason);
    }
    r.trials.push_back(t);
  }
  r.target_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace opbench
