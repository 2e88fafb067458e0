// The agent loop: beam search over candidate kernels from a proposer. A translation phase turns the
// reference into a first correct kernel; each optimization iteration asks for plans per parent in
// the beam and implementations per plan, evaluates every new candidate with the full harness, and
// keeps the fastest correct ones as the next beam. Failed candidates are re-prompted with their
// errors. Everything is kept in OUT/<workload>/state.json: the proposer's answers by request and the
// results by normalized source, so a duplicate is never evaluated twice and an interrupted search,
// run again, replays what it has and measures only what it has not.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/evaluate.h"
#include "search/proposer.h"

namespace opbench {

struct SearchOptions {
  int beam_width = 4;
  int plans_per_parent = 4;
  int impls_per_plan = 2;
  int iterations = 8;
  double menu_dropout = 0.25;
  int repairs = 1;              // re-prompts of a failed candidate with its errors
  bool context = true;          // false: prompts without the curated context (the ablation)
  bool compare_expert = true;   // evaluate the workload's expert once, for the share-of-expert figure
  std::filesystem::path start;  // a kernel to start from instead of translating (tune needs one; default: the expert)
  std::filesystem::path out_dir;
  int max_evals = 0;            // stop after this many new evaluations in this invocation (0: no limit)
  uint64_t seed = 1;
  EvalOptions eval;
  // Where candidates are measured: candidates in, one result each out, in order. Empty: here, with
  // `eval`. (`--executor slurm` puts src/cluster/slurm_evaluator.h here.)
  std::function<std::vector<Result>(const WorkloadSpec&, const std::vector<Implementation>&)> evaluator;
};

struct SearchSummary {
  std::string workload, proposer, stop_reason;
  size_t evaluated = 0;          // distinct candidates evaluated, over all invocations
  size_t correct = 0, built = 0, duplicates = 0, proposer_failures = 0;
  size_t evaluated_now = 0;      // in this invocation (a resumed search measures only what is new)
  double build_s = 0, eval_s = 0, proposer_s = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double best_speedup = 0;       // 0 when nothing was correct
  std::string best_source;       // path of the best candidate
  double best_ms = 0, baseline_ms = 0;
  double expert_speedup = 0;     // 0 when there is no expert (or it was not evaluated)
  double share_of_expert = 0;    // best_speedup / expert_speedup
  double payback_calls = 0;      // calls of the kernel for the time saved per call to repay build + eval time; 0: never
  int iterations_done = 0;

  nlohmann::json to_json() const;
  static SearchSummary from_json(const nlohmann::json& j);
  double correctness_rate() const { return evaluated ? double(correct) / double(evaluated) : 0; }
};

SearchSummary beam_search(const WorkloadSpec& spec, Proposer& proposer, Target& target, const SearchOptions& options,
                          const std::function<void(const std::string&)>& progress = {});

// The text of a source with comments and runs of white space removed: two candidates that differ
// only there are the same candidate.
std::string normalize_source(const std::string& source);

}  // namespace opbench
