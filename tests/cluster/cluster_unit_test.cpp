// The pieces of the cluster layer that need no cluster: shard partitions, array specs, script text,
// shell quoting, and every refusal of the merge.
#include <gtest/gtest.h>

#include <set>

#include "cluster/merge.h"
#include "cluster/run_identity.h"
#include "cluster/sbatch_script.h"
#include "cluster/shard.h"
#include "cluster/slurm_client.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/process.h"

namespace opbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(Shard, ParsesIOfN) {
  Shard s = parse_shard("1/4");
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.to_string(), "1/4");
  EXPECT_TRUE(parse_shard("0/1").whole());
}

TEST(Shard, RefusesWhatIsNotAShard) {
  for (const char* bad : {"", "1", "4/4", "5/4", "-1/4", "0/0", "a/2", "1/b", "1/2/3", " 1/2", "1/2 ", "1/-2"})
    EXPECT_THROW(parse_shard(bad), UsageError) << bad;
}

TEST(Shard, EveryEvaluationIsInExactlyOneShard) {
  for (int n = 1; n <= 7; ++n)
    for (size_t total : {0u, 1u, 5u, 13u, 50u}) {
      std::vector<int> owners(total, 0);
      for (int i = 0; i < n; ++i)
        for (size_t p = 0; p < total; ++p) owners[p] += Shard{i, n}.contains(p);
      for (size_t p = 0; p < total; ++p) EXPECT_EQ(owners[p], 1) << p << " of " << total << " in " << n << " shards";
      // Balanced: shard sizes differ by at most one.
      size_t smallest = total, largest = 0;
      for (int i = 0; i < n; ++i) {
        size_t size = 0;
        for (size_t p = 0; p < total; ++p) size += Shard{i, n}.contains(p);
        smallest = std::min(smallest, size);
        largest = std::max(largest, size);
      }
      EXPECT_LE(largest - smallest, 1u);
    }
}

TEST(Slurm, ArraySpecsAreCompactRanges) {
  EXPECT_EQ(slurm_array_spec({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(slurm_array_spec({5, 0, 1, 3, 7, 8, 8}), "0-1,3,5,7-8");
  EXPECT_EQ(slurm_array_spec({4}), "4");
}

TEST(Slurm, ActiveStatesAreWaitedFor) {
  for (const char* s : {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}) EXPECT_TRUE(slurm_state_active(s)) << s;
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"})
    EXPECT_FALSE(slurm_state_active(s)) << s;
}

TEST(SbatchScript, QuotesSurviveTheShell) {
  for (std::string text : {"plain", "two words", "it's", "$HOME `id` \"q\" \\ ;&|*?", ""}) {
    ProcessOutcome p = run_process({"bash", "-c", "printf %s " + shell_quote(text)}, std::chrono::seconds(10));
    EXPECT_EQ(p.output, text);
  }
}

TEST(SbatchScript, HasTheResourcesAskedFor) {
  ArrayScript s;
  s.job_name = "opbench-run";
  s.indexes = {1, 2, 4};
  s.log_dir = "/shared/logs";
  s.settings.cpus_per_task = 8;
  s.settings.gpus = "a100:1";
  s.settings.partition = "gpu";
  s.settings.time = "30:00";
  s.settings.account = "proj7";
  s.settings.exclusive = true;
  s.settings.extra = {"--qos=high"};
  s.body = {"echo body"};
  const std::string text = render_sbatch_script(s);
  for (const char* line : {"#!/bin/bash\n", "#SBATCH --array=1-2,4\n", "#SBATCH --nodes=1\n", "#SBATCH --ntasks=1\n",
                           "#SBATCH --cpus-per-task=8\n", "#SBATCH --gpus-per-task=a100:1\n", "#SBATCH --partition=gpu\n",
                           "#SBATCH --time=30:00\n", "#SBATCH --account=proj7\n", "#SBATCH --exclusive\n", "#SBATCH --qos=high\n",
                           "#SBATCH --output=/shared/logs/%A-%a.log\n", "\necho body\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  // Options not given stay out: the cluster's defaults apply.
  ArrayScript plain = s;
  plain.settings = {};
  const std::string bare = render_sbatch_script(plain);
  for (const char* absent : {"--gpus", "--partition", "--time", "--account", "--exclusive"}) EXPECT_EQ(bare.find(absent), std::string::npos) << absent;
}

// A run folder as `opbench run` writes it, with results of the given evaluations.
struct FakeRun {
  std::string size = "test", target = "cpu", isa = "x86-64-v3", cpu = "Some CPU", host = "node1";
  int cpus = 2;
  std::vector<std::pair<std::string, std::string>> evaluations;  // workload, impl
  std::optional<std::pair<int, int>> shard;                      // index, count
  std::vector<std::string> planned;                              // shard's evaluations (default: those present)

  void write(const fs::path& dir) const {
    json results = json::array();
    for (const auto& [w, impl] : evaluations) {
      Result r;
      r.workload = w;
      r.size = size;
      r.target = target;
      r.impl.kind = impl;
      r.status = impl == "reference" ? Status::incorrect : Status::correct;
      results.push_back(to_json(r));
    }
    json doc = stamp_schema({{"size", size}, {"target", target}, {"isa_level", isa}, {"seconds", 1.5},
                             {"machine", {{"hostname", host}, {"cpu", cpu}, {"logical_cpus", cpus}}},
                             {"summary", json::object()}, {"results", results}}, "opbench.run");
    if (shard) {
      json names = json::array();
      for (const auto& [w, impl] : evaluations) names.push_back(evaluation_name(w, impl));
      doc["shard"] = {{"index", shard->first}, {"count", shard->second}, {"evaluations", planned.empty() ? names : json(planned)}};
    }
    fs::create_directories(dir);
    write_json_atomic(dir / "results.json", doc);
  }
};

class Merge : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("opbench-merge-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path dir(const std::string& name) { return root_ / name; }
  // The message of the UsageError the merge throws; empty when it does not throw.
  std::string refusal(const std::vector<fs::path>& dirs, MergeOptions o = {}) {
    try {
      merge_runs(dirs, dir("merged"), o);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }
  fs::path root_;
};

TEST_F(Merge, TwoShardsMakeOneRunInSuiteOrder) {
  FakeRun a{.evaluations = {{"12p_RMSNorm", "baseline"}, {"8p_GEMM", "reference"}}, .shard = std::pair(0, 2)};
  FakeRun b{.host = "node2", .evaluations = {{"8p_GEMM", "baseline"}}, .shard = std::pair(1, 2)};
  a.write(dir("s0"));
  b.write(dir("s1"));
  MergeOutcome m = merge_runs({dir("s0"), dir("s1")}, dir("merged"), {});
  ASSERT_EQ(m.results.size(), 3u);
  EXPECT_EQ(m.results[0].workload, "8p_GEMM");
  EXPECT_EQ(m.results[0].impl.kind, "baseline");
  EXPECT_EQ(m.results[1].impl.kind, "reference");
  EXPECT_EQ(m.results[2].workload, "12p_RMSNorm");
  EXPECT_TRUE(m.warnings.empty());
  json doc = read_json_document(dir("merged") / "results.json", "opbench.run");
  EXPECT_EQ(doc["results"].size(), 3u);
  EXPECT_EQ(doc["size"], "test");
  EXPECT_EQ(doc["merged_from"].size(), 2u);
  EXPECT_EQ(doc["hosts"], json({"node1", "node2"}));
  EXPECT_EQ(doc["summary"]["results"], 3);
  EXPECT_DOUBLE_EQ(doc["seconds"].get<double>(), 3.0);
  for (const char* file : {"8p_GEMM.baseline.json", "8p_GEMM.reference.json", "12p_RMSNorm.baseline.json"})
    EXPECT_TRUE(fs::exists(dir("merged") / file)) << file;
}

TEST_F(Merge, RefusesRunsThatAreNotComparable) {
  FakeRun base{.evaluations = {{"8p_GEMM", "baseline"}}};
  base.write(dir("a"));
  struct Case {
    std::string name;
    FakeRun run;
    std::string says;
  };
  std::vector<Case> cases{{"size", FakeRun{.size = "cpu"}, "size: test vs cpu"},
                          {"target", FakeRun{.target = "cuda"}, "target: cpu vs cuda"},
                          {"isa", FakeRun{.isa = "x86-64-v4"}, "ISA level: x86-64-v3 vs x86-64-v4"},
                          {"cpu", FakeRun{.cpu = "Other CPU"}, "CPU model"},
                          {"cpus", FakeRun{.cpus = 64}, "(usable CPUs): 2 vs 64"}};
  for (auto& c : cases) {
    c.run.evaluations = {{"12p_RMSNorm", "baseline"}};
    c.run.write(dir(c.name));
    const std::string why = refusal({dir("a"), dir(c.name)});
    EXPECT_NE(why.find(c.says), std::string::npos) << c.name << ": " << why;
    EXPECT_NE(why.find("--allow-mixed"), std::string::npos) << why;
    EXPECT_FALSE(fs::exists(dir("merged") / "results.json")) << c.name;
  }
  // A different hostname alone is what a cluster is: not mixing.
  FakeRun other_host{.host = "node9", .evaluations = {{"12p_RMSNorm", "baseline"}}};
  other_host.write(dir("host"));
  EXPECT_EQ(refusal({dir("a"), dir("host")}), "");
}

TEST_F(Merge, AllowMixedMergesAndSaysWhatDiffers) {
  FakeRun{.evaluations = {{"8p_GEMM", "baseline"}}}.write(dir("a"));
  FakeRun{.size = "cpu", .evaluations = {{"12p_RMSNorm", "baseline"}}}.write(dir("b"));
  MergeOutcome m = merge_runs({dir("a"), dir("b")}, dir("merged"), {.allow_mixed = true});
  EXPECT_EQ(m.results.size(), 2u);
  EXPECT_EQ(m.document["size"], "test,cpu");
  ASSERT_TRUE(m.document.contains("mixed"));
  EXPECT_NE(m.document["mixed"][0].get<std::string>().find("size"), std::string::npos);
}

TEST_F(Merge, RefusesTheSameEvaluationTwice) {
  FakeRun{.evaluations = {{"8p_GEMM", "baseline"}}}.write(dir("a"));
  FakeRun{.evaluations = {{"8p_GEMM", "baseline"}}}.write(dir("b"));
  EXPECT_NE(refusal({dir("a"), dir("b")}).find("8p_GEMM.baseline is in both"), std::string::npos);
  EXPECT_NE(refusal({dir("a"), dir("b")}, {.allow_mixed = true, .allow_partial = true}).find("in both"), std::string::npos);
}

TEST_F(Merge, RefusesMissingDuplicateAndForeignShards) {
  FakeRun{.evaluations = {{"8p_GEMM", "baseline"}}, .shard = std::pair(0, 3)}.write(dir("s0"));
  FakeRun{.evaluations = {{"12p_RMSNorm", "baseline"}}, .shard = std::pair(2, 3)}.write(dir("s2"));
  FakeRun{.evaluations = {{"1p_Flash", "baseline"}}, .shard = std::pair(0, 3)}.write(dir("s0-again"));
  FakeRun{.evaluations = {{"1p_Flash", "baseline"}}, .shard = std::pair(1, 2)}.write(dir("of-two"));
  EXPECT_NE(refusal({dir("s0"), dir("s2")}).find("shard(s) 1 of 3 missing"), std::string::npos);
  EXPECT_NE(refusal({dir("s0"), dir("s0-again")}).find("shard 0/3 is in both"), std::string::npos);
  EXPECT_NE(refusal({dir("s0"), dir("of-two")}).find("not one partition"), std::string::npos);
  // Asked for: the shards there are, with a warning.
  MergeOutcome m = merge_runs({dir("s0"), dir("s2")}, dir("merged"), {.allow_partial = true});
  EXPECT_EQ(m.results.size(), 2u);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("missing"), std::string::npos);
}

TEST_F(Merge, WarnsAboutPlannedEvaluationsWithoutResults) {
  FakeRun{.evaluations = {{"8p_GEMM", "baseline"}}, .shard = std::pair(0, 1), .planned = {"8p_GEMM.baseline", "1p_Flash.baseline"}}.write(dir("s0"));
  MergeOutcome m = merge_runs({dir("s0")}, dir("merged"), {});
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("no result for 1p_Flash.baseline"), std::string::npos);
}

TEST_F(Merge, RefusesUnfinishedRunsAndOverwritingAnInput) {
  FakeRun{.evaluations = {{"8p_GEMM", "baseline"}}}.write(dir("a"));
  fs::create_directories(dir("unfinished"));
  EXPECT_NE(refusal({dir("a"), dir("unfinished")}).find("has no results.json"), std::string::npos);
  EXPECT_NE(refusal({dir("a"), dir("nowhere")}).find("is not a folder"), std::string::npos);
  try {
    merge_runs({dir("a")}, dir("a"), {});
    FAIL() << "merged into its own input";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is one of the folders"), std::string::npos);
  }
  write_text_atomic(dir("a") / "results.json", "{\"schema\": \"opbench.result\", \"schema_version\": \"2.0\"}");
  EXPECT_NE(refusal({dir("a")}).find("cannot merge"), std::string::npos);
  EXPECT_THROW(merge_runs({}, dir("merged"), {}), UsageError);
}

TEST(RunIdentity, ThisMachineHasAnIsaLevel) {
  const std::string level = machine_isa_level();
  EXPECT_FALSE(level.empty());
#if defined(__x86_64__)
  EXPECT_EQ(level.rfind("x86-64", 0), 0u) << level;
#endif
}

}  // namespace
}  // namespace opbench
