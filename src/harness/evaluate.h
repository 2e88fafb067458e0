// One evaluation: build, check the kernel against the trusted baseline on fresh secret inputs,
// time it against the baseline with the paired protocol, and report. Every way a submitted kernel
// can fail ends as a Result with a status; only harness or machine faults throw. The phases live in
// harness/session.h; this header is what commands and the search use.
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
// `extension` is the target's (Target::source_extension()).
Implementation builtin_implementation(const WorkloadSpec& spec, const std::string& kind, const std::string& extension = ".cpp");

struct EvalOptions {
  std::string size = "cpu";
  std::string isa;        // the target's instruction-set level, resolved (cpu: x86-64-v4...); empty: its default
  SymbolTable overrides;  // --set SYMBOL=VALUE
  int threads = 0;        // 0: every core this process may use
  int trials = 3;         // correctness trials, each on its own freshly seeded input set
  bool time = true;       // false: correctness only
  bool sandbox = true;    // false: workers run unconfined (measuring the sandbox's cost, nothing else)
  bool warm_l2 = false;   // cuda: L2 kept warm between timed calls (default: flushed before each, cold)
  TimingOptions timing;
  // Wall-time bound of the whole evaluation (build, oracle, trials, timing, guards), seconds; 0: none.
  // The timing phase's cap shrinks to fit; guards that no longer fit are skipped and say so.
  double deadline_s = 0;
  // Most bytes the evaluation's buffers may take (inputs, both sides' outputs, expected copies);
  // 0: a quarter of the memory available when it starts. Fewer input sets are used to fit.
  uint64_t max_memory_bytes = 0;
  // This machine's ceilings for the roofline floor (0: unknown, no floor check).
  double peak_flops_per_s = 0, peak_bytes_per_s = 0;
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
// last-level cache, as many as fit in 256 MiB (so short calls still get long batches), at most
// 1024, and never more than fit in `max_memory_bytes` (0: no bound); 2 at least where two fit (the
// never-seen-inputs cross-check needs two), else 1.
int rotation_sets(const ResolvedWorkload& workload, uint64_t max_memory_bytes = 0);

// Bytes an evaluation holds per input set: the inputs and both sides' outputs (the expected outputs
// stay in the baseline's, and generation and comparison go a chunk at a time).
uint64_t bytes_per_set(const ResolvedWorkload& workload);

// Fills set `set` of `inputs` from `seed` (every input tensor of the workload).
void fill_input_set(const ResolvedWorkload& workload, BufferSet& inputs, int set, uint64_t seed);

}  // namespace opbench
