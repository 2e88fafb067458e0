#include "cluster/slurm_evaluator.h"

#include <map>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster/slurm_client.h"
#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/json_io.h"

namespace opbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// `opbench eval` arguments that select one implementation.
std::vector<std::string> implementation_args(const Implementation& impl) {
  if (impl.kind == "candidate") {
    if (!impl.defines.empty())
      throw UsageError("a candidate with compile-time parameters cannot be evaluated through `opbench eval`; use --executor local");
    return {fs::absolute(impl.source).string()};
  }
  return {"--impl", impl.kind};
}

// The folder of one batch: named by what it evaluates, so a resumed search finds the results of a
// batch that was interrupted, and a changed candidate never reads a stale result.
fs::path batch_dir(const SlurmEvaluatorOptions& o, const WorkloadSpec& spec, const std::vector<Implementation>& impls) {
  std::string identity = spec.id + "\n" + fmt::format("{}", fmt::join(o.eval_args, " ")) + "\n";
  for (const auto& impl : impls) identity += impl.kind + " " + impl.source.string() + " " + sha256_hex(read_file(impl.source)) + "\n";
  return o.dir / "batches" / (spec.id + "-" + sha256_hex(identity).substr(0, 16));
}

bool read_result(const fs::path& file, Result* out) {
  if (!fs::exists(file)) return false;
  try {
    *out = result_from_json(read_json_document(file, "opbench.result"));
    return true;
  } catch (const std::exception&) {
    return false;  // not ours or damaged: evaluate again
  }
}

std::string render(const SlurmEvaluatorOptions& o, const WorkloadSpec& spec, const std::vector<Implementation>& impls,
                   const std::vector<int>& indexes, const fs::path& batch) {
  ArrayScript s;
  s.job_name = "opbench-eval-" + spec.id;
  s.indexes = indexes;
  s.log_dir = fs::absolute(batch / "logs");
  s.settings = o.settings;
  s.body.push_back("case \"${SLURM_ARRAY_TASK_ID}\" in");
  for (size_t i = 0; i < impls.size(); ++i) {
    std::string words;
    for (const auto& a : implementation_args(impls[i])) words += " " + shell_quote(a);
    s.body.push_back(fmt::format("  {}) set --{} ;;", i, words));
  }
  s.body.push_back("  *) echo \"opbench: no candidate ${SLURM_ARRAY_TASK_ID} in this batch\" >&2; exit 2 ;;");
  s.body.push_back("esac");
  std::string command = shell_quote(o.opbench.string()) + " eval " + shell_quote(spec.id) + " \"$@\"";
  for (const auto& a : o.eval_args) command += " " + shell_quote(a);
  // eval writes its --json atomically (temporary file, fsync, rename): a result file is whole or absent.
  command += " --json " + shell_quote(fs::absolute(batch).string()) + "/\"${SLURM_ARRAY_TASK_ID}\".json";
  // Exit 1 (an incorrect kernel) still wrote its result; only a missing file is a failed task.
  s.body.push_back(command + " || status=$?");
  s.body.push_back("exit $(( ${status:-0} == 1 ? 0 : ${status:-0} ))");
  return render_sbatch_script(s);
}

class SlurmBatches {
 public:
  explicit SlurmBatches(SlurmEvaluatorOptions o) : o_(std::move(o)) {}

  std::vector<Result> operator()(const WorkloadSpec& spec, const std::vector<Implementation>& impls) {
    const fs::path batch = batch_dir(o_, spec, impls);
    fs::create_directories(batch / "logs");
    std::vector<Result> results(impls.size());
    json jobs = fs::exists(batch / "jobs.json") ? json::parse(read_file(batch / "jobs.json"), nullptr, false) : json::array();
    if (!jobs.is_array()) jobs = json::array();
    for (int attempt = 0;; ++attempt) {
      std::vector<int> missing;
      for (size_t i = 0; i < impls.size(); ++i)
        if (!read_result(batch / fmt::format("{}.json", i), &results[i])) missing.push_back(int(i));
      if (missing.empty()) return results;
      // Tasks of this batch still queued or running (an earlier invocation's) are followed, not resubmitted.
      std::map<int, SlurmTask> states = task_states(jobs);
      std::vector<int> to_submit;
      for (int i : missing)
        if (!(states.count(i) && slurm_state_active(states[i].state))) to_submit.push_back(i);
      if (!to_submit.empty()) {
        if (attempt > o_.retries) {
          std::vector<std::string> lines;
          for (int i : to_submit)
            lines.push_back(fmt::format("{} ({})", impls[i].source.filename().string(), states.count(i) ? states[i].state : std::string("no state")));
          throw ClusterJobsFailed(fmt::format(
              "{} Slurm task(s) ended without a result: {}; logs in {}. Nothing of this step was recorded: run the same command "
              "again to resubmit only these",
              to_submit.size(), fmt::join(lines, ", "), (batch / "logs").string()));
        }
        const fs::path script = batch / fmt::format("submit-{}.sbatch", jobs.size());
        write_text_atomic(script, render(o_, spec, impls, to_submit, batch));
        const std::string job = slurm_.submit(script, fs::current_path());
        jobs.push_back({{"job_id", job}, {"tasks", to_submit}});
        write_json_atomic(batch / "jobs.json", jobs);
        say(fmt::format("submitted job {}: {} evaluation(s) of {}", job, to_submit.size(), spec.id));
      }
      follow(jobs);
    }
  }

 private:
  void say(const std::string& s) {
    if (o_.progress) o_.progress(s);
  }
  std::map<int, SlurmTask> task_states(const json& jobs) {
    std::map<int, SlurmTask> out;
    for (const auto& j : jobs) {
      bool known = false;
      for (const auto& t : slurm_.tasks(j["job_id"], &known))
        if (t.array_index >= 0) out[t.array_index] = t;
    }
    return out;
  }
  void follow(const json& jobs) {
    for (;;) {
      bool active = false;
      for (const auto& [i, t] : task_states(jobs)) active = active || slurm_state_active(t.state);
      if (!active) return;
      std::this_thread::sleep_for(std::chrono::duration<double>(o_.poll_seconds));
    }
  }

  SlurmEvaluatorOptions o_;
  SlurmClient slurm_;
};

}  // namespace

BatchEvaluator slurm_evaluator(SlurmEvaluatorOptions options) {
  auto batches = std::make_shared<SlurmBatches>(std::move(options));
  return [batches](const WorkloadSpec& spec, const std::vector<Implementation>& impls) { return (*batches)(spec, impls); };
}

}  // namespace opbench
