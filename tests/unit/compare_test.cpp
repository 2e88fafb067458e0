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

namespace opbench {
namespace {

// All within tolerance takes the branch-free pass; its maxima must be those of the exact pass, which
// a single element outside tolerance at the end forces (its own error kept out of the maxima by
// being NaN, which counts as a mismatch and not in max_abs_err).
TEST(Compare, TheFastPassReportsTheExactPassesMaxima) {
  const Tolerance tol{1e-2, 1e-2};
  std::vector<float> expected{1.0f, -4.0f, 0.0f, -0.0f, 250.0f, 3.0f}, got{1.001f, -4.02f, 0.004f, -0.003f, 251.0f, 3.0f};
  const Comparison fast = compare_tensors(got.data(), expected.data(), got.size(), DType::f32, tol);
  ASSERT_TRUE(fast.passed());
  got.push_back(NAN);
  expected.push_back(1.0f);
  const Comparison exact = compare_tensors(got.data(), expected.data(), got.size(), DType::f32, tol);
  EXPECT_EQ(exact.mismatches, 1u);
  EXPECT_DOUBLE_EQ(fast.max_abs_err, exact.max_abs_err);
  EXPECT_DOUBLE_EQ(fast.max_rel_err, exact.max_rel_err);
  EXPECT_NEAR(fast.max_abs_err, 1.0, 1e-9);         // 251 vs 250
  EXPECT_NEAR(fast.max_rel_err, 0.02 / 4.0, 1e-6);  // -4.02 vs -4: zeros take no part in the relative error
}

TEST(Compare, TheFastPassHandsInfinitiesToTheExactPass) {
  const Tolerance tol{1e-3, 1e-3};
  const std::vector<float> both{INFINITY, -INFINITY, 1.0f};
  const Comparison c = compare_tensors(both.data(), both.data(), 3, DType::f32, tol);
  EXPECT_TRUE(c.passed());
  EXPECT_EQ(c.non_finite, 0u);
  const std::vector<int32_t> a{1, 2, 3}, b{1, 2, 4};
  EXPECT_EQ(compare_tensors(a.data(), b.data(), 3, DType::i32, Tolerance{0, 0}).mismatches, 1u);
  const std::vector<uint16_t> x{0x3F80, 0x4000}, y{0x3F80, 0x4040};  // bf16 1, 2 against 1, 3
  const Comparison bf = compare_tensors(x.data(), y.data(), 2, DType::bf16, Tolerance{0.5, 0});
  EXPECT_EQ(bf.mismatches, 1u);
  EXPECT_EQ(bf.first_mismatch, 1);
}

}  // namespace
}  // namespace opbench
