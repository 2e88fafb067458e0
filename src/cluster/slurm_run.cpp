#include "cluster/slurm_run.h"

#include <chrono>
#include <ctime>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster/slurm_client.h"
#include "core/error.h"
#include "core/json_io.h"

namespace opbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kStateSchema = "opbench.slurm.run";

fs::path state_path(const fs::path& out) { return out / "slurm" / "state.json"; }

// The state of a Slurm run: what each shard runs and every job submitted for it.
json load_state(const SlurmRunRequest& r) {
  const fs::path path = state_path(r.out);
  json fresh = stamp_schema({{"run_args", r.run_args}, {"shards", r.shards}, {"submissions", json::array()}}, kStateSchema);
  if (!fs::exists(path)) return fresh;
  json state;
  try {
    state = read_json_document(path, kStateSchema);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: {}; use another --out", path.string(), e.what()));
  }
  // Shards of different options must never be merged: the same command resumes, another is refused.
  if (state.value("run_args", json()) != fresh["run_args"] || state.value("shards", 0) != r.shards)
    throw UsageError(fmt::format("{} holds a Slurm run with other options ({} shards of: {}); resume it with the same options or use another --out",
                                 r.out.string(), state.value("shards", 0), fmt::join(state.value("run_args", std::vector<std::string>{}), " ")));
  return state;
}

// A shard is done when its run wrote a complete results.json for this very shard of this partition
// (run rewrites results.json after every evaluation with "complete": false until the end).
bool shard_done(const fs::path& out, int index, int count) {
  const fs::path file = shard_dir(out, index) / "results.json";
  if (!fs::exists(file)) return false;
  try {
    json doc = read_json_document(file, "opbench.run");
    return doc.value("complete", true) && doc.contains("shard") && doc["shard"].value("index", -1) == index &&
           doc["shard"].value("count", 0) == count;
  } catch (const std::exception&) {
    return false;
  }
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

std::string render_script(const SlurmRunRequest& r, const std::vector<int>& indexes) {
  ArrayScript s;
  s.job_name = "opbench-run";
  s.indexes = indexes;
  s.log_dir = fs::absolute(r.out / "slurm" / "logs");
  s.settings = r.settings;
  std::string command = shell_quote(r.opbench.string()) + " run";
  for (const auto& a : r.run_args) command += " " + shell_quote(a);
  const std::string shards_root = shell_quote(fs::absolute(r.out / "shards").string());
  s.body = {
      "shard=\"${SLURM_ARRAY_TASK_ID}\"",
      // The run writes results.json last, atomically: its presence is what marks the shard done.
      fmt::format("exec {} --shard \"${{shard}}/{}\" --out {}/\"${{shard}}\"", command, r.shards, shards_root),
  };
  return render_sbatch_script(s);
}

// The last known Slurm state of each shard over every job of the run; later submissions win.
std::map<int, SlurmTask> shard_states(const SlurmClient& slurm, const json& state) {
  std::map<int, SlurmTask> out;
  for (const auto& sub : state["submissions"]) {
    bool known = false;
    for (const auto& t : slurm.tasks(sub["job_id"], &known))
      if (t.array_index >= 0) out[t.array_index] = t;
  }
  return out;
}

}  // namespace

fs::path shard_dir(const fs::path& out, int index) { return out / "shards" / std::to_string(index); }

int slurm_run(const SlurmRunRequest& r, const std::function<void(const std::string&)>& say) {
  if (r.shards < 1) throw UsageError("--shards must be at least 1");
  SlurmClient slurm;
  json state = load_state(r);
  for (int attempt = 0;; ++attempt) {
    std::vector<int> done, missing;
    for (int i = 0; i < r.shards; ++i) (shard_done(r.out, i, r.shards) ? done : missing).push_back(i);
    if (missing.empty()) break;
    // Shards a job of this run still has queued or running are followed, not submitted again.
    std::map<int, SlurmTask> states = r.dry_run ? std::map<int, SlurmTask>{} : shard_states(slurm, state);
    std::vector<int> to_submit;
    for (int i : missing)
      if (!(states.count(i) && slurm_state_active(states[i].state))) to_submit.push_back(i);
    if (r.dry_run) {
      fmt::print("{}", render_script(r, to_submit));
      return 0;
    }
    if (!to_submit.empty()) {
      if (attempt > r.retries) {
        std::vector<std::string> lines;
        for (int i : to_submit) {
          const std::string st = states.count(i) ? states[i].state : std::string("unknown");
          lines.push_back(fmt::format("shard {}: {} (log in {})", i, st, (r.out / "slurm" / "logs").string()));
        }
        say(fmt::format("{} of {} shards have no results:\n  {}\nrun the same command again to resubmit only those", to_submit.size(),
                        r.shards, fmt::join(lines, "\n  ")));
        return 1;
      }
      fs::create_directories(r.out / "slurm" / "logs");
      const int n = int(state["submissions"].size());
      const fs::path script = r.out / "slurm" / fmt::format("submit-{}.sbatch", n);
      write_text_atomic(script, render_script(r, to_submit));
      const std::string job = slurm.submit(script, fs::current_path());
      state["submissions"].push_back({{"job_id", job}, {"shards", to_submit}, {"script", script.string()}, {"submitted", now_utc()}});
      write_json_atomic(state_path(r.out), state);
      say(fmt::format("submitted job {}: shards {} of {}{}", job, slurm_array_spec(to_submit), r.shards,
                      done.empty() ? "" : fmt::format(" ({} already done)", done.size())));
    }
    if (!r.wait) {
      say("not waiting (--no-wait); run the same command again to follow the job and merge");
      return 0;
    }
    // Follow every job of the run until none of its tasks can still run.
    std::map<int, std::string> last;
    for (;;) {
      std::map<int, SlurmTask> now = shard_states(slurm, state);
      bool active = false;
      for (const auto& [i, t] : now) {
        if (last[i] != t.state)
          say(fmt::format("shard {}: {}{}", i, t.state, t.state == "PENDING" && !t.reason.empty() ? " (" + t.reason + ")" : ""));
        last[i] = t.state;
        active = active || slurm_state_active(t.state);
      }
      if (!active) break;
      std::this_thread::sleep_for(std::chrono::duration<double>(r.poll_seconds));
    }
  }
  if (r.dry_run) {
    say(fmt::format("all {} shards have results; nothing to submit", r.shards));
    return 0;
  }
  say(fmt::format("all {} shards done; merging into {}", r.shards, r.out.string()));
  std::vector<fs::path> dirs;
  for (int i = 0; i < r.shards; ++i) dirs.push_back(shard_dir(r.out, i));
  MergeOutcome merged = merge_runs(dirs, r.out, r.merge);
  for (const auto& w : merged.warnings) say("warning: " + w);
  return 0;
}

}  // namespace opbench
