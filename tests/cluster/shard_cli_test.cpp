// `opbench run --shard` and `opbench merge` through the CLI, without a cluster: the shards of a run,
// merged, hold what the unsharded run holds.
#include <gtest/gtest.h>

#include <set>

#include "cluster_fixture.h"

namespace opbench::testing {
namespace {

TEST(ShardCli, TwoShardsMergedHoldTheLocalRun) {
  auto dir = scratch_dir("shard-cli");
  const std::vector<std::string> run = {"run", "--workloads", "8p,12p", "--impl", "reference,baseline", "--size", "test",
                                        "--max-time", "0.2", "--trials", "1", "--threads", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = run;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  CliRun local = run_cli(with({"--out", (dir / "local").string()}));
  ASSERT_EQ(local.exit_code, 0) << local.output;
  std::set<std::string> seen;
  for (int i = 0; i < 2; ++i) {
    CliRun shard = run_cli(with({"--shard", std::to_string(i) + "/2", "--out", (dir / std::to_string(i)).string()}));
    ASSERT_EQ(shard.exit_code, 0) << shard.output;
    nlohmann::json doc = read_json(dir / std::to_string(i) / "results.json");
    EXPECT_EQ(doc["shard"]["index"], i);
    EXPECT_EQ(doc["shard"]["count"], 2);
    EXPECT_EQ(doc["results"].size(), 2u) << "round robin over 4 evaluations gives 2 to each shard";
    for (const auto& r : doc["results"]) EXPECT_TRUE(seen.insert(evaluation_of(r)).second) << evaluation_of(r) << " in two shards";
  }
  CliRun merged = run_cli({"merge", (dir / "0").string(), (dir / "1").string(), "--out", (dir / "merged").string()});
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_EQ(output_verdicts(dir / "merged"), output_verdicts(dir / "local")) << results_summary(dir / "merged") << results_summary(dir / "local");
  EXPECT_EQ(statuses(dir / "local").size(), 4u);
  // Merging one shard alone is refused: the other is missing.
  CliRun partial = run_cli({"merge", (dir / "0").string(), "--out", (dir / "partial").string()});
  EXPECT_EQ(partial.exit_code, 2) << partial.output;
  EXPECT_NE(partial.output.find("missing"), std::string::npos) << partial.output;
  std::filesystem::remove_all(dir);
}

TEST(ShardCli, RefusesAShardOutsideItsRun) {
  for (const char* bad : {"2/2", "0/0", "x"}) {
    CliRun r = run_cli({"run", "--workloads", "8p", "--size", "test", "--shard", bad, "--out", "/tmp/opbench-never"});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("--shard"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace opbench::testing
