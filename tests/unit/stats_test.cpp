#include <gtest/gtest.h>

#include <cmath>

#include "core/stats.h"

namespace opbench {

TEST(Stats, SummarizesSamples) {
  Summary s = summarize({3, 1, 2, 4});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_NEAR(s.stdev, std::sqrt(5.0 / 3.0), 1e-12);
}

TEST(Stats, StudentQuantilesMatchTables) {
  EXPECT_NEAR(student_t95(1), 12.706, 1e-3);
  EXPECT_NEAR(student_t95(10), 2.228, 1e-3);
  EXPECT_NEAR(student_t95(1000), 1.96, 1e-3);
}

TEST(Stats, PairedRatioIsGeometricWithInterval) {
  RatioEstimate r = paired_ratio({2.0, 0.5, 2.0, 0.5});
  EXPECT_NEAR(r.geomean, 1.0, 1e-12);
  EXPECT_LT(r.ci95_low, 1.0);
  EXPECT_GT(r.ci95_high, 1.0);
  RatioEstimate constant = paired_ratio({1.5, 1.5, 1.5});
  EXPECT_NEAR(constant.geomean, 1.5, 1e-12);
  EXPECT_NEAR(constant.ci95_low, 1.5, 1e-12);
  EXPECT_NEAR(constant.ci95_high, 1.5, 1e-12);
}

TEST(Stats, DropsOnlyFarOutliers) {
  std::vector<double> ratios{1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 25.0, 0.04};
  size_t dropped = 0;
  auto kept = drop_outlier_ratios(ratios, &dropped);
  EXPECT_EQ(dropped, 2u);
  EXPECT_EQ(kept.size(), 6u);
  // A genuine spread (a noisy but real 1.3x) is kept whole.
  std::vector<double> spread{1.2, 1.3, 1.4, 1.25, 1.35, 1.3};
  kept = drop_outlier_ratios(spread, &dropped);
  EXPECT_EQ(dropped, 0u);
}

}  // namespace opbench
