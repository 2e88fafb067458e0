#include "cluster/sbatch_script.h"

#include <fmt/format.h>

#include "cluster/slurm_client.h"

namespace opbench {

std::string shell_quote(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") == std::string::npos)
    return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string render_sbatch_script(const ArrayScript& s) {
  const SbatchSettings& o = s.settings;
  std::string text = "#!/bin/bash\n";
  auto directive = [&](const std::string& option) { text += "#SBATCH " + option + "\n"; };
  directive("--job-name=" + s.job_name);
  directive("--array=" + slurm_array_spec(s.indexes));
  // One task on one node per array element: a paired measurement never spans machines.
  directive("--nodes=1");
  directive("--ntasks=1");
  directive(fmt::format("--cpus-per-task={}", o.cpus_per_task));
  if (!o.gpus.empty()) directive("--gpus-per-task=" + o.gpus);
  if (!o.partition.empty()) directive("--partition=" + o.partition);
  if (!o.time.empty()) directive("--time=" + o.time);
  if (!o.account.empty()) directive("--account=" + o.account);
  if (o.exclusive) directive("--exclusive");
  for (const auto& e : o.extra) directive(e);
  directive("--output=" + (s.log_dir / "%A-%a.log").string());
  text += "\nset -euo pipefail\n";
  text += "echo \"opbench: task ${SLURM_ARRAY_TASK_ID} of job ${SLURM_ARRAY_JOB_ID} on $(hostname)\" >&2\n";
  for (const auto& line : s.body) text += line + "\n";
  return text;
}

}  // namespace opbench
