// `opbench slurm run`: one run split into N shards, each an array task of one sbatch job; followed
// until every task ends, then the shards are merged into the run folder. The state of the whole run
// lives in OUT/slurm/state.json and the results in OUT/shards/<I>/, so the same command, run again
// after a failure or a cancellation, resubmits only the shards that have no results yet (and
// follows those still queued or running instead of submitting them twice).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cluster/merge.h"
#include "cluster/sbatch_script.h"

namespace opbench {

struct SlurmRunRequest {
  std::filesystem::path out;           // the run folder (on a filesystem every node sees)
  std::filesystem::path opbench;       // this program, as the nodes reach it
  std::vector<std::string> run_args;   // `opbench run` options for every shard, without --out and --shard
  int shards = 1;
  SbatchSettings settings;
  bool dry_run = false;   // print the script of the missing shards; submit nothing
  bool wait = true;       // follow the job to its end and merge; false: submit and return
  double poll_seconds = 10;
  int retries = 0;        // resubmissions of failed shards before giving up
  MergeOptions merge;
};

// Returns the exit code: 0 all shards merged (or submitted without --wait, or a dry run), 1 shards
// failed (the message names them, their state and log).
int slurm_run(const SlurmRunRequest& request, const std::function<void(const std::string&)>& say);

// The folder of shard `index` of the run in `out`.
std::filesystem::path shard_dir(const std::filesystem::path& out, int index);

}  // namespace opbench
