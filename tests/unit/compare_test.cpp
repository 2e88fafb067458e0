#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/compare.h"

namespace opbench {

TEST(Compare, AcceptsWithinToleranceAndCountsMismatches) {
  Tolerance tol{1e-3, 1e-3};
  std::vector<float> expected{1.0f, -2.0f, 100.0f, 0.0f};
  std::vector<float> got{1.0015f, -2.0025f, 100.05f, 0.0009f};
  Comparison c = compare_tensors(got.data(), expected.data(), 4, DType::f32, tol);
  EXPECT_TRUE(c.passed()) << c.mismatches;
  got[2] = 100.2f;  // 0.2 > 1e-3 + 0.1
  c = compare_tensors(got.data(), expected.data(), 4, DType::f32, tol);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.first_mismatch, 2);
  EXPECT_NEAR(c.max_abs_err, 0.2, 1e-4);
}

TEST(Compare, NaNNeverPasses) {
  Tolerance tol{1e9, 1e9};
  std::vector<float> expected{1.0f, 2.0f};
  std::vector<float> got{NAN, 2.0f};
  Comparison c = compare_tensors(got.data(), expected.data(), 2, DType::f32, tol);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.non_finite, 1u);
}

TEST(Compare, InfinityMatchesOnlyItself) {
  Tolerance tol{1e-3, 1e-3};
  std::vector<float> expected{INFINITY, 1.0f};
  std::vector<float> got{INFINITY, INFINITY};
  Comparison c = compare_tensors(got.data(), expected.data(), 2, DType::f32, tol);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.first_mismatch, 1);
}

}  // namespace opbench
