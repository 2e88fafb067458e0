// Results at different instruction-set levels are over different baselines: the scoreboard keeps
// them apart and never folds them into one geomean.
#include <gtest/gtest.h>

#include "report/scoreboard.h"

namespace opbench {
namespace {

Result timed(const std::string& workload, const std::string& isa, double speedup) {
  Result r;
  r.workload = workload;
  r.isa = isa;
  r.impl.kind = "expert";
  r.status = Status::correct;
  r.timing = TimingInfo{};
  r.speedup = SpeedupInfo{};
  r.speedup->vs_baseline = speedup;
  return r;
}

TEST(ScoreboardIsa, OneLevelSummarizesAsBefore) {
  const std::vector<Result> rs{timed("8p", "x86-64-v4", 2.0), timed("1p", "x86-64-v4", 8.0)};
  EXPECT_NEAR(summarize_results(rs).geomean_correct_only, 4.0, 1e-9);
  EXPECT_EQ(scoreboard_json(rs)["isa"], "x86-64-v4");
}

TEST(ScoreboardIsa, MixedLevelsAreNeverSummarizedTogether) {
  const std::vector<Result> rs{timed("8p", "x86-64-v3", 2.0), timed("8p", "x86-64-v4", 8.0)};
  EXPECT_THROW(summarize_results(rs), std::invalid_argument);
  const nlohmann::json j = scoreboard_json(rs);
  ASSERT_TRUE(j.contains("by_isa"));
  EXPECT_FALSE(j.contains("geomean_speedup_correct_only"));
  EXPECT_NEAR(j["by_isa"]["x86-64-v3"]["geomean_speedup_correct_only"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(j["by_isa"]["x86-64-v4"]["geomean_speedup_correct_only"].get<double>(), 8.0, 1e-9);
  const std::string text = render_scoreboard(rs);
  EXPECT_NE(text.find("== instruction set x86-64-v3 =="), std::string::npos) << text;
  EXPECT_NE(text.find("== instruction set x86-64-v4 =="), std::string::npos) << text;
  EXPECT_EQ(text.find("geomean speedup: 4.000"), std::string::npos) << text;  // no mixed geomean
}

}  // namespace
}  // namespace opbench
