// The search's evaluations as Slurm jobs (`opbench search --executor slurm`): a batch of candidates
// (one step of the search) becomes one sbatch array, a task per candidate running `opbench eval` on
// some node, and each result comes back as a file in the search's folder, written atomically by the
// task. The search records nothing until the whole batch has results: when a task fails without a
// result or is cancelled, the evaluator throws, the search state stays as it was, and the same
// command later reuses the results that did arrive and resubmits only the missing tasks.
#pragma once

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cluster/sbatch_script.h"
#include "harness/evaluate.h"

namespace opbench {

// Tasks ended without results (failed, cancelled, timed out): the search stops, recording nothing of
// the step; the same command resumes it.
struct ClusterJobsFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Candidates in, one result per candidate out, in order: the same shape as the search's evaluator.
using BatchEvaluator = std::function<std::vector<Result>(const WorkloadSpec& spec, const std::vector<Implementation>& candidates)>;

struct SlurmEvaluatorOptions {
  std::filesystem::path dir;            // where batches, scripts, logs and results go (shared filesystem)
  std::filesystem::path opbench;        // this program, as the nodes reach it
  std::vector<std::string> eval_args;   // `opbench eval` options for every candidate (size, threads, ...)
  SbatchSettings settings;
  double poll_seconds = 5;
  int retries = 0;                      // resubmissions of tasks that ended without a result
  std::function<void(const std::string&)> progress;
};

BatchEvaluator slurm_evaluator(SlurmEvaluatorOptions options);

}  // namespace opbench
