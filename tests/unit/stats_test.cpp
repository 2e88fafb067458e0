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

TEST(Stats, HodgesLehmannFollowsTheMedianUnderHeavyTails) {
  // Mostly ~0.95 with a tenth of the pairs disturbed by a factor of 100 in one direction: the mean
  // of logs is dragged far off, the Hodges-Lehmann estimate and its interval stay near the median.
  std::vector<double> ratios;
  for (int i = 0; i < 45; ++i) ratios.push_back(0.95 * (1 + 0.01 * ((i * 7) % 5 - 2)));
  for (int i = 0; i < 5; ++i) ratios.push_back(0.0095);
  const double median = summarize(ratios).median;
  RatioEstimate hl = hodges_lehmann_ratio(ratios);
  RatioEstimate mean = paired_ratio(ratios);
  EXPECT_LT(mean.geomean, 0.65);  // what the old estimator reported
  EXPECT_NEAR(hl.geomean / median, 1.0, 0.05);
  EXPECT_LE(hl.ci95_low, median * 1.001);
  EXPECT_GE(hl.ci95_high, median * 0.90);
  EXPECT_GT(hl.ci95_low, 0.80);
}

TEST(Stats, HodgesLehmannIntervalCoversAndNarrows) {
  RatioEstimate constant = hodges_lehmann_ratio({1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5});
  EXPECT_NEAR(constant.geomean, 1.5, 1e-12);
  EXPECT_NEAR(constant.ci95_low, 1.5, 1e-12);
  EXPECT_NEAR(constant.ci95_high, 1.5, 1e-12);
  std::vector<double> few{1.0, 1.1, 0.9}, many;
  for (int i = 0; i < 200; ++i) many.push_back(i % 2 ? 1.1 : 0.9);
  RatioEstimate a = hodges_lehmann_ratio(few), b = hodges_lehmann_ratio(many);
  EXPECT_LE(a.ci95_low, 1.0);
  EXPECT_GE(a.ci95_high, 1.0);
  EXPECT_LT(b.rel_halfwidth, a.rel_halfwidth);
  EXPECT_LE(b.ci95_low, 1.0);
  EXPECT_GE(b.ci95_high, 0.99);
  EXPECT_TRUE(std::isinf(hodges_lehmann_ratio({2.0}).ci95_high));
}

}  // namespace opbench
