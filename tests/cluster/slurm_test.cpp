// opbench on a real Slurm: a single-node cluster from Debian's packages (scripts/slurm-local, started
// by the ctest fixture `slurm`), driven through the CLI as a user drives it. A 2-shard run merged
// equals a local run; a cancelled shard is finished by the resume, which submits only it; a scripted
// search evaluates its candidates as Slurm jobs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cluster_fixture.h"
#include "core/files.h"
#include "core/process.h"

namespace opbench::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Fails (never skips) when the cluster is not there, unless its start found no way to install Slurm.
class SlurmCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    // The cluster of the ctest fixture, unless SLURM_CONF names another (one started by hand).
    const fs::path dir = OPBENCH_SLURM_DIR;
    if (fs::exists(dir / "unavailable")) GTEST_SKIP() << read_file(dir / "unavailable");
    if (!std::getenv("SLURM_CONF")) ::setenv("SLURM_CONF", (dir / "slurm.conf").c_str(), 1);
    ASSERT_TRUE(fs::exists(std::getenv("SLURM_CONF"))) << std::getenv("SLURM_CONF") << " missing: run through ctest (fixture slurm) "
                                                          "or start a cluster with scripts/slurm-local start DIR and export what it prints";
    ProcessOutcome sinfo = run_process({"sinfo", "--noheader", "--Node", "--format=%T"}, 30s);
    ASSERT_TRUE(sinfo.ok()) << "the Slurm cluster does not answer: " << sinfo.output;
    ASSERT_NE(sinfo.output.find("idle"), std::string::npos) << "no idle node: " << sinfo.output;
  }
};

const std::vector<std::string> kRun = {"--workloads", "8p,12p", "--impl", "reference,baseline", "--size", "test", "--trials", "1", "--threads", "1"};

std::vector<std::string> args(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

nlohmann::json slurm_state(const fs::path& out) { return read_json(out / "slurm" / "state.json"); }

TEST_F(SlurmCluster, TwoShardRunMergesIntoTheLocalRun) {
  auto dir = scratch_dir("slurm-run");
  const auto run = args(kRun, {"--max-time", "0.2"});
  CliRun local = run_cli(args({"run"}, args(run, {"--out", (dir / "local").string()})));
  ASSERT_EQ(local.exit_code, 0) << local.output;
  // The script first, as --dry-run prints it: an array of two, one node and one CPU per task.
  CliRun dry = run_cli(args({"slurm", "run"}, args(run, {"--shards", "2", "--out", (dir / "slurm").string(), "--dry-run"})));
  ASSERT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_NE(dry.output.find("#SBATCH --array=0-1"), std::string::npos) << dry.output;
  EXPECT_NE(dry.output.find("#SBATCH --nodes=1"), std::string::npos) << dry.output;
  EXPECT_FALSE(fs::exists(dir / "slurm" / "slurm")) << "a dry run submits and records nothing";

  CliRun slurm = run_cli(args({"slurm", "run"}, args(run, {"--shards", "2", "--poll", "0.5", "--out", (dir / "slurm").string()})), 600);
  ASSERT_EQ(slurm.exit_code, 0) << slurm.output;
  // The same evaluations with the same verdicts on their outputs; a timing verdict (untrusted) may
  // differ with the load beside each run, and is printed when it does.
  EXPECT_EQ(output_verdicts(dir / "slurm"), output_verdicts(dir / "local")) << results_summary(dir / "slurm") << results_summary(dir / "local");
  if (statuses(dir / "slurm") != statuses(dir / "local"))
    std::cerr << "note: timing verdicts differ between the runs\n" << results_summary(dir / "slurm") << results_summary(dir / "local");
  EXPECT_EQ(statuses(dir / "slurm").size(), 4u);
  nlohmann::json merged = read_json(dir / "slurm" / "results.json");
  EXPECT_EQ(merged["merged_from"].size(), 2u);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(read_json(dir / "slurm" / "shards" / std::to_string(i) / "results.json")["results"].size(), 2u);
  nlohmann::json state = slurm_state(dir / "slurm");
  ASSERT_EQ(state["submissions"].size(), 1u);
  EXPECT_EQ(state["submissions"][0]["shards"], nlohmann::json({0, 1}));
  // Both tasks really ran under Slurm: each left its log, naming its array task.
  const std::string job = state["submissions"][0]["job_id"];
  for (int i = 0; i < 2; ++i) {
    const std::string log = read_file(dir / "slurm" / "slurm" / "logs" / (job + "-" + std::to_string(i) + ".log"));
    EXPECT_NE(log.find("opbench: task " + std::to_string(i) + " of job " + job), std::string::npos) << log;
  }
  // Run again: everything is there, nothing is submitted.
  CliRun again = run_cli(args({"slurm", "run"}, args(run, {"--shards", "2", "--poll", "0.5", "--out", (dir / "slurm").string()})), 120);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(slurm_state(dir / "slurm")["submissions"].size(), 1u);
  // Other options on the same folder are refused: their shards would not belong together.
  CliRun other = run_cli(args({"slurm", "run"}, args(run, {"--shards", "4", "--out", (dir / "slurm").string()})), 120);
  EXPECT_EQ(other.exit_code, 2) << other.output;
  fs::remove_all(dir);
}

TEST_F(SlurmCluster, ACancelledShardIsResubmittedAloneAndTheRunFinishes) {
  auto dir = scratch_dir("slurm-cancel");
  const fs::path out = dir / "run";
  // Timing long enough (up to 2 s an evaluation) that shard 1 is caught running.
  const auto command = args({"slurm", "run"}, args(kRun, {"--max-time", "2", "--shards", "2", "--poll", "0.5", "--out", out.string()}));
  CliRun first;
  std::thread follower([&] { first = run_cli(command, 600); });
  // Wait for the job, then for its task 1 to run, and cancel that task.
  std::string job;
  bool cancelled = false;
  for (int i = 0; i < 600 && !cancelled; ++i) {
    std::this_thread::sleep_for(100ms);
    if (job.empty() && fs::exists(out / "slurm" / "state.json")) job = slurm_state(out)["submissions"][0]["job_id"];
    if (job.empty()) continue;
    ProcessOutcome q = run_process({"squeue", "--noheader", "--array", "--jobs=" + job + "_1", "--format=%T"}, 30s);
    // Running, and opbench in it has begun the shard (its folder exists): cancelled mid-run.
    if (q.output.find("RUNNING") != std::string::npos && fs::exists(out / "shards" / "1")) {
      ProcessOutcome c = run_process({"scancel", job + "_1"}, 30s);
      ASSERT_TRUE(c.ok()) << c.output;
      cancelled = true;
    }
  }
  follower.join();
  ASSERT_TRUE(cancelled) << "task 1 never seen running: " << first.output;
  EXPECT_EQ(first.exit_code, 1) << first.output;
  EXPECT_NE(first.output.find("shard 1: CANCELLED"), std::string::npos) << first.output;
  EXPECT_FALSE(fs::exists(out / "results.json")) << "no merge while a shard is missing";
  // The cancelled shard's run may have written its unfinished results.json ("complete": false).
  EXPECT_FALSE(fs::exists(out / "shards" / "1" / "results.json") && read_json(out / "shards" / "1" / "results.json").value("complete", true));

  // The same command resumes: it submits shard 1 alone and merges all four evaluations.
  CliRun resumed = run_cli(command, 600);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  nlohmann::json state = slurm_state(out);
  ASSERT_EQ(state["submissions"].size(), 2u) << state.dump(2);
  EXPECT_EQ(state["submissions"][1]["shards"], nlohmann::json({1})) << state.dump(2);
  EXPECT_EQ(statuses(out).size(), 4u);
  for (const auto& [evaluation, verdict] : output_verdicts(out)) EXPECT_EQ(verdict, "correct") << evaluation << "\n" << results_summary(out);
  fs::remove_all(dir);
}


// The search of tests/e2e/search_test.cpp (scripted proposer, 8p at a small shape, 2 iterations), its
// evaluations run as Slurm jobs. First with every task failing (the nodes cannot find the suite):
// the search stops, records no evaluation, and says how to resume; then the same search resumes
// and finds what the local one finds.
TEST_F(SlurmCluster, AScriptedSearchEvaluatesAsSlurmJobs) {
  auto out = scratch_dir("slurm-search");
  const std::string proposer = std::string("cmd:") + SCRIPTED_PROPOSER + " " + (source_dir() / "tests/proposers/gemm_script").string();
  const std::vector<std::string> search = {"search", "8p_GEMM", "--proposer", proposer, "--size", "test", "--set", "M=128", "--set", "K=256",
                                           "--set", "N=128", "--max-time", "0.5", "--iterations", "2", "--beam-width", "2", "--plans", "3",
                                           "--impls", "1", "--expert", "off", "--threads", "1", "--out", out.string(),
                                           "--executor", "slurm", "--poll", "0.5",
                                           // The scripted kernels are AVX2 (see search_test.cpp): at v4 the naive
                                           // translation auto-vectorises and the blocked kernel need not win.
                                           "--isa", "x86-64-v3", "--max-memory", "32M"};
  CliRun broken = run_cli(args(search, {"--sbatch-arg=--export=ALL,OPBENCH_WORKLOADS=/nonexistent"}), 600);
  EXPECT_EQ(broken.exit_code, 1) << broken.output;
  EXPECT_NE(broken.output.find("ended without a result"), std::string::npos) << broken.output;
  if (fs::exists(out / "8p_GEMM" / "state.json"))
    EXPECT_TRUE(read_json(out / "8p_GEMM" / "state.json")["evaluated"].empty()) << "a failed task recorded as a candidate";

  CliRun run = run_cli(search, 900);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json s = read_json(out / "run.json")["workloads"][0];
  // The same candidates as the local search: the naive translation, the one that does not compile,
  // its repair, the blocked kernel, the wrong one.
  EXPECT_EQ(s["evaluated"], 5) << s.dump(2);
  EXPECT_EQ(s["correct"], 3) << s.dump(2);
  EXPECT_EQ(s["built"], 4) << s.dump(2);
  EXPECT_EQ(s["iterations_done"], 2) << s.dump(2);
  // The blocked kernel wins, unless its measurement could not be ranked: on a loaded machine (ctest
  // runs two tests at once, Slurm two tasks) the parent's and the worker's clocks may disagree, and
  // the search then rightly keeps the best rankable candidate.
  const nlohmann::json state = read_json(out / s["state_dir"].get<std::string>() / "state.json");
  std::string table;
  bool blocked_rankable = false;
  const std::string blocked = read_file(source_dir() / "examples/8p_GEMM/blocked_avx2.cpp");
  for (const auto& c : state["evaluated"]) {
    table += fmt::format("{} {} {} speedup {} rankable {}\n", c["file"].get<std::string>(), c["phase"].get<std::string>(),
                         c["status"].get<std::string>(), c.value("speedup", 0.0), c.value("rankable", false));
    if (read_file(out / s["state_dir"].get<std::string>() / c["file"].get<std::string>()) == blocked) blocked_rankable = c.value("rankable", false);
  }
  // Whatever the clocks did, the best is the fastest rankable correct candidate.
  double top = -1;
  std::string top_file;
  for (const auto& c : state["evaluated"])
    if (c["status"] == "correct" && c.value("rankable", false) && c.value("speedup", 0.0) > top) {
      top = c.value("speedup", 0.0);
      top_file = c["file"].get<std::string>();
    }
  EXPECT_EQ(s["best_source"].get<std::string>(), (std::filesystem::path(s["state_dir"].get<std::string>()) / top_file).string()) << table;
  if (blocked_rankable) EXPECT_EQ(read_file(out / s["best_source"].get<std::string>()), blocked) << table;
  // Every evaluation went through Slurm: a batch folder per step with its jobs, logs and results.
  size_t results = 0, resubmitted = 0;
  for (const auto& batch : fs::directory_iterator(out / "slurm" / "batches")) {
    nlohmann::json jobs = read_json(batch.path() / "jobs.json");
    EXPECT_FALSE(jobs.empty()) << batch.path();
    resubmitted += jobs.size() > 1;
    for (const auto& f : fs::directory_iterator(batch.path())) {
      const std::string name = f.path().filename().string();
      results += name.size() > 5 && name.substr(name.size() - 5) == ".json" && name != "jobs.json";
    }
  }
  EXPECT_EQ(results, 5u);
  EXPECT_EQ(resubmitted, 1u) << "the batch whose task failed is resubmitted once";
  fs::remove_all(out);
}

}  // namespace
}  // namespace opbench::testing
