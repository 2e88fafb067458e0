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

namespace opbench {
namespace {

// The session compares large outputs a chunk at a time and merges: the merged comparison is the one
// of the whole tensor, first mismatch index included.
TEST(Compare, ChunksMergedAreTheWholeComparison) {
  std::vector<float> got(10, 1.0f), expected(10, 1.0f);
  got[7] = 2.0f;
  got[8] = NAN;
  const Tolerance tol{1e-3, 1e-3};
  const Comparison whole = compare_tensors(got.data(), expected.data(), 10, DType::f32, tol);
  Comparison merged;
  for (size_t b = 0; b < 10; b += 3) {
    const size_t n = std::min<size_t>(3, 10 - b);
    merged.merge(compare_tensors(got.data() + b, expected.data() + b, n, DType::f32, tol));
  }
  EXPECT_EQ(merged.elements, whole.elements);
  EXPECT_EQ(merged.mismatches, whole.mismatches);
  EXPECT_EQ(merged.non_finite, whole.non_finite);
  EXPECT_EQ(merged.first_mismatch, 7);
  EXPECT_EQ(merged.first_mismatch, whole.first_mismatch);
  EXPECT_DOUBLE_EQ(merged.max_abs_err, whole.max_abs_err);
}

}  // namespace
}  // namespace opbench
