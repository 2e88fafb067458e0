// The text of an sbatch array script: the #SBATCH resource lines from the user's options and a body
// the caller writes (each array task does one piece of the work, chosen by $SLURM_ARRAY_TASK_ID).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace opbench {

// Where and with what each task runs. One task per array element, on one node: the two sides of a
// paired measurement (baseline and candidate) are always timed on the same machine.
struct SbatchSettings {
  int cpus_per_task = 1;
  std::string gpus;       // --gpus-per-task, e.g. "1" or "a100:1"; empty: none
  std::string partition;  // empty: the cluster's default
  std::string time;       // --time, e.g. "30:00"; empty: the partition's default
  std::string account;    // empty: the user's default
  bool exclusive = false; // whole nodes: nothing else runs beside a timing
  std::vector<std::string> extra;  // more sbatch options as given (--constraint=..., --qos=...)
};

struct ArrayScript {
  std::string job_name;
  std::vector<int> indexes;      // array task ids to run
  std::filesystem::path log_dir; // one log per task: <job>-<task>.log
  SbatchSettings settings;
  std::vector<std::string> body; // shell lines, already quoted
};

std::string render_sbatch_script(const ArrayScript& script);

// `text` as one shell word.
std::string shell_quote(const std::string& text);

}  // namespace opbench
