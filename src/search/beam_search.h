// The agent loop: beam search over candidate kernels from a proposer. A translation phase turns the
// reference into a first correct kernel; each optimization iteration asks for plans per parent in
// the beam and implementations per plan, evaluates every new candidate with the full harness, and
// keeps the fastest correct ones as the next beam. Failed candidates are re-prompted with their
// errors.
//
// The search is a pure function of (options, the proposer's answers, the evaluation results). Its
// state, OUT/<workload>/<target>-<size>[-<overrides>]/state.json, keeps the answers by request and the
// results by normalized source; a run replays every decision from the start, asking and measuring
// only what the state does not hold, so an interrupted search, run again, ends exactly where an
// uninterrupted one ends.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/evaluate.h"
#include "search/proposer.h"

namespace opbench {

// The seam where candidates are measured: a list of implementations in, one Result per
// implementation out, in the same order. The search hands over every new candidate of one step
// (all implementations of one parent, all translations) at once, so an evaluator may run them in
// parallel or on other machines (a batch scheduler). local_evaluator measures here, one at a time.
using Evaluator = std::function<std::vector<Result>(const WorkloadSpec& spec, const std::vector<Implementation>& candidates)>;
Evaluator local_evaluator(Target& target, const EvalOptions& options);

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
  size_t max_source_bytes = 256 * 1024;  // a larger candidate is a counted failure, never evaluated or stored
  uint64_t seed = 1;
  std::string target = "cpu";   // the target's name: with the size, part of the state's key
  EvalOptions eval;
  Evaluator evaluator;          // empty: local_evaluator(target, eval)
};

struct SearchSummary {
  std::string workload, proposer, stop_reason, target, size;
  std::string state_dir;         // the search's folder, relative to --out
  size_t evaluated = 0;          // distinct candidates evaluated, over all invocations
  size_t correct = 0, built = 0, duplicates = 0, proposer_failures = 0;
  size_t evaluated_now = 0;      // in this invocation (a resumed search measures only what is new)
  size_t agent_calls = 0, agent_calls_ok = 0;  // proposer calls in the search's history, and those that answered
  std::map<std::string, size_t> failures;      // every failure by kind: proposer calls, lost completions, oversized sources
  bool budget_stopped = false;   // stopped at --max-evals: run again to go on
  double build_s = 0, eval_s = 0, proposer_s = 0;  // proposer_s includes failed and timed-out calls
  double proposer_failed_s = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double best_speedup = 0;       // 0 when nothing was correct
  std::string best_source;       // the best candidate's source, relative to --out
  std::string best_key;          // its key (sha256 of the normalized source)
  std::vector<std::string> beam; // keys of the final beam, best first
  double best_ms = 0, baseline_ms = 0;
  double expert_speedup = 0;     // 0 when there is no expert (or it was not evaluated)
  double share_of_expert = 0;    // best_speedup / expert_speedup
  double payback_calls = 0;      // calls of the kernel for the time saved per call to repay build + eval time; 0: never
  int iterations_done = 0;

  // True when the proposer was asked and never answered usefully: the run measured no agent.
  bool no_successful_agent_call() const { return !budget_stopped && agent_calls_ok == 0; }
  nlohmann::json to_json() const;
  static SearchSummary from_json(const nlohmann::json& j);
  double correctness_rate() const { return evaluated ? double(correct) / double(evaluated) : 0; }
};

inline constexpr const char* kSearchStateSchema = "opbench.search_state";
inline constexpr const char* kSearchSummarySchema = "opbench.search_summary";
inline constexpr const char* kSearchRunSchema = "opbench.search_run";
inline constexpr const char* kSearchLogSchema = "opbench.search_log";

SearchSummary beam_search(const WorkloadSpec& spec, Proposer& proposer, Target& target, const SearchOptions& options,
                          const std::function<void(const std::string&)>& progress = {});

// The folder of one workload's search under --out: keyed by target, size and shape overrides, so a
// search at another size never reuses another's results.
std::filesystem::path search_state_dir(const std::string& workload, const SearchOptions& options);

// The text of a source with comments and runs of white space removed: two candidates that differ
// only there are the same candidate.
std::string normalize_source(const std::string& source);

}  // namespace opbench
