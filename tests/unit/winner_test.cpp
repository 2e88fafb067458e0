// The tuner keeps a winner only when the intervals say it won.
#include <gtest/gtest.h>

#include "search/result_store.h"

namespace opbench {
namespace {

StoredPoint point(const std::string& tile, Status status, double speedup, double low, double high) {
  StoredPoint p;
  p.point = {{"TILE", tile}};
  p.status = status;
  p.speedup = speedup;
  p.ci95_low = low;
  p.ci95_high = high;
  return p;
}

TEST(ChooseWinner, OverlappingIntervalsKeepTheDefault) {
  const ParamPoint defaults{{"TILE", "64"}};
  // 128 looks 3% faster, but its interval overlaps the default's: a tie, the default stays.
  auto w = choose_winner({point("64", Status::correct, 1.00, 0.97, 1.03), point("128", Status::correct, 1.03, 1.00, 1.06)}, defaults);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->point.at("TILE"), "64");
}

TEST(ChooseWinner, ASeparatedChallengerWinsAndTheFastestSuchWins) {
  const ParamPoint defaults{{"TILE", "64"}};
  auto w = choose_winner({point("64", Status::correct, 1.00, 0.98, 1.02), point("128", Status::correct, 1.20, 1.15, 1.25),
                          point("256", Status::correct, 1.30, 1.05, 1.60), point("32", Status::incorrect, 9.0, 8.0, 10.0)},
                         defaults);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->point.at("TILE"), "256");
}

TEST(ChooseWinner, WithoutACorrectDefaultTheFastestCorrectPoint) {
  const ParamPoint defaults{{"TILE", "64"}};
  auto w = choose_winner({point("64", Status::timeout, 0, 0, 0), point("128", Status::correct, 0.9, 0.8, 1.0),
                          point("256", Status::correct, 1.1, 0.9, 1.3)},
                         defaults);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->point.at("TILE"), "256");
  EXPECT_FALSE(choose_winner({point("64", Status::incorrect, 0, 0, 0)}, defaults));
}

}  // namespace
}  // namespace opbench
