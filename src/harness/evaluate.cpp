#include "harness/evaluate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/machine.h"
#include "harness/session.h"
#include "workload/inputs.h"

namespace opbench {

int default_thread_count() { return std::max(1, machine_info().logical_cpus); }

uint64_t bytes_per_set(const ResolvedWorkload& w) {
  return uint64_t(w.input_bytes()) + 2 * uint64_t(w.output_bytes());
}

// Enough sets that one pass over them is twice the last-level cache, so no call finds its data warm
// from an earlier one; and, where they fit in 256 MiB, more: a batch never runs a set twice (so that
// every call's outputs can be checked), and more sets mean longer batches for short calls. The
// memory bound wins over both.
int rotation_sets(const ResolvedWorkload& w, uint64_t max_memory_bytes) {
  const double per_set = std::max(double(w.input_bytes() + w.output_bytes()), 1.0);
  const double for_cache = std::ceil(2.0 * double(machine_info().llc_bytes) / per_set);
  const double for_batches = std::floor(double(256u << 20) / per_set);
  double sets = std::clamp(std::max(for_cache, for_batches), 2.0, 1024.0);
  if (max_memory_bytes > 0) sets = std::min(sets, std::floor(double(max_memory_bytes) / double(std::max<uint64_t>(bytes_per_set(w), 1))));
  return int(std::max(sets, 1.0));
}

void fill_input_set(const ResolvedWorkload& w, BufferSet& inputs, int set, uint64_t seed) {
  // Large tensors are generated a chunk at a time, so the parent never holds a second whole copy
  // of a set (12p at the cpu size has a 512 MiB input).
  constexpr uint64_t kChunkElements = uint64_t(4) << 20;
  std::vector<std::byte> host;
  for (size_t t = 0; t < w.inputs.size(); ++t) {
    const TensorInstance& tensor = w.inputs[t];
    if (!element_wise(tensor)) {
      host.resize(tensor.bytes());
      fill_input(host.data(), tensor, seed, t, default_thread_count());
      inputs.write(set, int(t), host.data(), host.size());
      continue;
    }
    const uint64_t n = tensor.numel(), elem = dtype_size(tensor.dtype);
    host.resize(std::min(n, kChunkElements) * elem);
    for (uint64_t b = 0; b < n; b += kChunkElements) {
      const uint64_t e = std::min(n, b + kChunkElements);
      fill_input_range(host.data(), tensor, seed, t, b, e, default_thread_count());
      inputs.write_part(set, int(t), b * elem, host.data(), (e - b) * elem);
    }
  }
}

Implementation builtin_implementation(const WorkloadSpec& spec, const std::string& kind, const std::string& extension) {
  if (kind != "reference" && kind != "baseline" && kind != "expert")
    throw UsageError(fmt::format("unknown implementation '{}' (use reference, baseline or expert)", kind));
  if (kind == "reference" && extension != ".cpp")
    throw UsageError(fmt::format("the reference is the cpu's fp32 oracle; on this target check the baseline against it with "
                                 "opbench crosscheck {}", spec.id));
  if (!spec.has_implementation(kind, extension))
    throw UsageError(fmt::format("{} has no {} implementation ({} not found)", spec.id, kind, spec.implementation(kind, extension).string()));
  return Implementation{kind, spec.implementation(kind, extension), {}};
}

Result evaluate(const WorkloadSpec& spec, const Implementation& candidate, Target& target, const EvalOptions& options) {
  EvaluationSession session(spec, candidate, target, options);
  return session.run();
}

SingleRun run_once(const ResolvedWorkload& w, const Implementation& impl, Target& target, uint64_t seed, int threads) {
  BuildOutcome build = target.build({impl.source, impl.kind, impl.trusted(), impl.defines, {}});
  if (!build.ok) throw std::runtime_error(fmt::format("{} did not compile:\n{}", impl.source.string(), build.log));
  SingleRun run;
  run.inputs = target.allocate(w.inputs, 1, "inputs");
  run.outputs = target.allocate(w.outputs, 1, "outputs");
  fill_input_set(w, *run.inputs, 0, seed);
  run.outputs->poison(0);
  LaunchOptions options;
  options.threads = threads;
  LaunchOutcome launch = target.launch(build, *run.inputs, *run.outputs, options);
  if (!launch.runner) throw std::runtime_error(fmt::format("{} did not load: {}", impl.source.string(), launch.reason));
  BatchOutcome b = launch.runner->run(0, 1, std::chrono::hours(1));
  if (!b.ok()) throw std::runtime_error(fmt::format("{} failed: {}", impl.source.string(), b.detail));
  return run;
}

}  // namespace opbench
