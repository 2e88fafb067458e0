// The leaderboard's metrics (search/leaderboard.h) on summaries built in the test.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "search/leaderboard.h"

namespace opbench {
namespace {

SearchSummary summary(const std::string& workload, double best, size_t evaluated, size_t correct, size_t calls_ok = 3) {
  SearchSummary s;
  s.workload = workload;
  s.best_speedup = best;
  s.evaluated = evaluated;
  s.correct = correct;
  s.agent_calls = 3;
  s.agent_calls_ok = calls_ok;
  s.expert_speedup = 2.0;
  return s;
}

SearchRun run(const std::string& label, std::vector<SearchSummary> summaries, const std::string& isa = "x86-64-v4") {
  SearchRun r{label, "/x/" + label, isa, {}};
  for (auto& s : summaries) r.by_workload[s.workload] = s;
  return r;
}

TEST(Leaderboard, MetricsOnTheCommonWorkloads) {
  const Leaderboard b = compute_leaderboard({run("a", {summary("w1", 2.0, 4, 2), summary("w2", 0.5, 2, 1), summary("w3", 9, 1, 1)}),
                                             run("b", {summary("w1", 0, 3, 0), summary("w2", 1.5, 3, 3)})});
  ASSERT_EQ(b.workloads, (std::vector<std::string>{"w1", "w2"}));  // w3 only in a: left out
  const auto& a = b.rows[0];
  EXPECT_EQ(a.candidates, 6u);
  EXPECT_DOUBLE_EQ(a.correctness_rate, 0.5);
  EXPECT_DOUBLE_EQ(a.fast_1, 0.5);
  EXPECT_NEAR(a.geomean_speedup, 1.0, 1e-12);                // sqrt(2 * 0.5)
  EXPECT_NEAR(b.rows[1].geomean_speedup, std::sqrt(1.5), 1e-12);  // no correct kernel on w1: 1.0
  ASSERT_TRUE(a.share_of_expert.has_value());
  EXPECT_NEAR(*a.share_of_expert, 0.5, 1e-12);
  EXPECT_EQ(b.rows[1].rank, 1);
  EXPECT_EQ(a.rank, 2);
}

TEST(Leaderboard, ASearchWithNoSuccessfulAgentCallIsMarkedAndNotRanked) {
  const Leaderboard b = compute_leaderboard({run("good", {summary("w1", 1.2, 4, 2)}), run("dead", {summary("w1", 0, 0, 0, 0)})});
  EXPECT_TRUE(b.rows[0].competed);
  EXPECT_EQ(b.rows[0].rank, 1);
  EXPECT_FALSE(b.rows[1].competed);
  EXPECT_EQ(b.rows[1].rank, 0);
  EXPECT_NE(b.rows[1].not_ranked_because.find("no successful agent call"), std::string::npos);
  const auto j = b.to_json();
  EXPECT_EQ(j["schema"], kLeaderboardSchema);
  EXPECT_TRUE(j["runs"][1]["rank"].is_null());
}

TEST(Leaderboard, RunsWithoutACommonWorkloadAreAUsageError) {
  EXPECT_THROW(compute_leaderboard({run("a", {summary("w1", 1, 1, 1)}), run("b", {summary("w2", 1, 1, 1)})}), UsageError);
}

TEST(Leaderboard, RunsAtDifferentInstructionSetLevelsAreNeverRankedTogether) {
  EXPECT_THROW(compute_leaderboard({run("v3", {summary("w1", 1.5, 1, 1)}, "x86-64-v3"), run("v4", {summary("w1", 1.2, 1, 1)}, "x86-64-v4")}),
               UsageError);
  EXPECT_EQ(compute_leaderboard({run("a", {summary("w1", 1.5, 1, 1)}), run("b", {summary("w1", 1.2, 1, 1)})}).to_json()["isa"], "x86-64-v4");
}

}  // namespace
}  // namespace opbench
