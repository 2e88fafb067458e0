// One evaluation: build, check the kernel against the trusted baseline on fresh secret inputs,
// time it against the baseline with the paired protocol, and report. Every way a submitted kernel
// can fail ends as a Result with a status; only harness or machine faults throw.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/result.h"
#include "harness/timing.h"
#include "targets/target.h"
#include "workload/spec.h"

namespace opbench {

struct Implementation {
  std::string kind;  // reference, baseline, expert, candidate
  std::filesystem::path source;
  std::vector<std::pair<std::string, std::string>> defines;
  bool trusted() const { return kind == "baseline" || kind == "reference"; }
};

// A built-in implementation of a workload by kind; throws UsageError when the workload has none.
Implementation builtin_implementation(const WorkloadSpec& spec, const std::string& kind);

struct EvalOptions {
  std::string size = "cpu";
  SymbolTable overrides;  // --set SYMBOL=VALUE
  int threads = 0;        // 0: every core this process may use
  int trials = 3;         // correctness trials, each on its own freshly seeded input set
  bool time = true;       // false: correctness only
  bool sandbox = true;    // false: workers run unconfined (measuring the sandbox's cost, nothing else)
  TimingOptions timing;
  std::function<void(const std::string&)> progress;
};

Result evaluate(const WorkloadSpec& spec, const Implementation& candidate, Target& target, const EvalOptions& options);

// Runs one implementation once on inputs generated from `seed`, for `opbench dump` and the tests.
// Returns the inputs and outputs (one set each) or throws with the reason the run failed.
struct SingleRun {
  std::unique_ptr<BufferSet> inputs, outputs;
};
SingleRun run_once(const ResolvedWorkload& workload, const Implementation& impl, Target& target, uint64_t seed, int threads);

int default_thread_count();

// How many input sets an evaluation rotates through: one pass over them is at least twice the
// last-level cache, as many as fit in 256 MiB, at least 2 and at most 64.
int rotation_sets(const ResolvedWorkload& workload);

// Fills set `set` of `inputs` from `seed` (every input tensor of the workload).
void fill_input_set(const ResolvedWorkload& workload, BufferSet& inputs, int set, uint64_t seed);

}  // namespace opbench
