#include "cluster/slurm_client.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/process.h"

namespace opbench {
namespace {

constexpr std::chrono::seconds kCommandTimeout{60};

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(field);
  return out;
}

int parse_index(const std::string& text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) return -1;
  return std::stoi(text);
}

}  // namespace

bool slurm_state_active(const std::string& state) {
  static const char* const active[] = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_FED",
                                       "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "STOPPED"};
  return std::find(std::begin(active), std::end(active), state) != std::end(active);
}

std::string slurm_array_spec(std::vector<int> indexes) {
  std::sort(indexes.begin(), indexes.end());
  indexes.erase(std::unique(indexes.begin(), indexes.end()), indexes.end());
  std::vector<std::string> parts;
  for (size_t i = 0; i < indexes.size();) {
    size_t j = i;
    while (j + 1 < indexes.size() && indexes[j + 1] == indexes[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(indexes[i]) : fmt::format("{}-{}", indexes[i], indexes[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

std::string SlurmClient::submit(const std::filesystem::path& script, const std::filesystem::path& workdir) const {
  ProcessOutcome p = run_process({"sbatch", "--parsable", "--chdir=" + workdir.string(), script.string()}, kCommandTimeout);
  if (!p.ok()) throw std::runtime_error(fmt::format("sbatch refused {}: {}", script.string(), trim(p.output)));
  // --parsable prints "JOBID" or "JOBID;CLUSTER"; warnings may come before it.
  std::istringstream lines(p.output);
  std::string line, id;
  while (std::getline(lines, line)) {
    line = trim(line);
    const std::string first = line.substr(0, line.find(';'));
    if (!first.empty() && std::all_of(first.begin(), first.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) id = first;
  }
  if (id.empty()) throw std::runtime_error(fmt::format("sbatch gave no job id: {}", trim(p.output)));
  return id;
}

std::vector<SlurmTask> SlurmClient::tasks(const std::string& job_id, bool* known) const {
  std::vector<SlurmTask> out;
  *known = false;
  // -r: one line per array task, pending ones too; %K is the array index, N/A outside arrays.
  ProcessOutcome q = run_process({"squeue", "--noheader", "--array", "--states=all", "--jobs=" + job_id, "--format=%K|%T|%r"}, kCommandTimeout);
  if (q.ok()) {
    for (const auto& line : split(q.output, '\n')) {
      auto f = split(trim(line), '|');
      if (f.size() < 2) continue;
      out.push_back({parse_index(f[0]), f[1], f.size() > 2 ? f[2] : ""});
    }
    if (!out.empty()) {
      *known = true;
      return out;
    }
  }
  // Gone from the controller's memory (MinJobAge): ask the accounting database, where there is one.
  ProcessOutcome a = run_process({"sacct", "--noheader", "--parsable2", "--allocations", "--jobs=" + job_id, "--format=JobID,State"}, kCommandTimeout);
  if (!a.ok()) return out;
  for (const auto& line : split(a.output, '\n')) {
    auto f = split(trim(line), '|');
    if (f.size() < 2) continue;
    const size_t underscore = f[0].find('_');
    // "CANCELLED by 0" -> CANCELLED
    out.push_back({underscore == std::string::npos ? -1 : parse_index(f[0].substr(underscore + 1)), split(f[1], ' ').front(), ""});
  }
  *known = !out.empty();
  return out;
}

void SlurmClient::cancel(const std::string& job_id) const {
  ProcessOutcome p = run_process({"scancel", job_id}, kCommandTimeout);
  if (!p.ok()) throw std::runtime_error(fmt::format("scancel {} failed: {}", job_id, trim(p.output)));
}

}  // namespace opbench
