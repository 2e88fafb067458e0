// Slurm through its own commands: sbatch to submit, squeue (and sacct, where the cluster keeps
// accounting) to follow, scancel to stop. No home-made scheduling: Slurm decides where and when.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace opbench {

struct SlurmTask {
  int array_index = -1;  // -1: not an array task
  std::string state;     // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  std::string reason;    // why pending, when Slurm says
};

// Job states in which a task may still run (or is being cleaned up): wait for these.
bool slurm_state_active(const std::string& state);

// "0-3,5,7-8" for sbatch --array.
std::string slurm_array_spec(std::vector<int> indexes);

class SlurmClient {
 public:
  // Submits a batch script from `workdir`; returns the job id. Throws std::runtime_error with
  // sbatch's own words when it refuses (no controller, bad partition or account, ...).
  std::string submit(const std::filesystem::path& script, const std::filesystem::path& workdir) const;
  // Every task of a job that the controller still remembers (squeue --states=all), else what sacct
  // knows; `known` is false when neither knows the job (it aged out and there is no accounting).
  std::vector<SlurmTask> tasks(const std::string& job_id, bool* known) const;
  void cancel(const std::string& job_id) const;
};

}  // namespace opbench
