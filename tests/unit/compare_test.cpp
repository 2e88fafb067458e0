#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
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
// The f32 comparison has a vector fast pass on AVX-512 hosts (a filter: where it finds an element
// outside, the exact pass describes the range). At every length (its 8-wide steps and their tails), at
// the tolerance boundary (one float step either side of atol + rtol·|e|, and exact ties) and with a NaN
// anywhere, the result must be the definition's: verdict, counts and maxima exactly.
TEST(Compare, EveryPassGivesTheDefinitionsVerdictAtTheBoundary) {
  const Tolerance tol{std::ldexp(1.0, -17), std::ldexp(1.0, -10)};  // powers of two: exact ties below
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-10.0f, 10.0f);
  for (size_t n = 1; n <= 41; ++n) {
    std::vector<float> expected(n), got(n);
    for (size_t i = 0; i < n; ++i) {
      const float e = i % 7 == 3 ? 0.0f : value(rng);
      const double bound = tol.atol + tol.rtol * std::fabs(double(e));
      float g = float(double(e) + bound);  // near the boundary; one step out, one step in, or exact
      if (i % 3 == 1) g = std::nextafter(g, INFINITY);
      if (i % 3 == 2) g = std::nextafter(g, -INFINITY);
      if (i % 5 == 4) g = e;
      if (i % 4 == 0) {  // an exact tie, err == atol + rtol·|e| in double: within (<=, not <)
        const float p = std::ldexp(1.0f, int(i % 9) - 4) * (i % 8 == 0 ? 1.0f : -1.0f);
        expected[i] = p;
        got[i] = float(double(p) + (p > 0 ? 1 : -1) * (tol.atol + tol.rtol * std::fabs(double(p))));
        continue;
      }
      expected[i] = e;
      got[i] = g;
    }
    size_t outside = 0;
    double max_abs = 0, max_rel = 0;
    for (size_t i = 0; i < n; ++i) {
      const double g = got[i], e = expected[i], err = std::fabs(g - e);
      outside += !(err <= tol.atol + tol.rtol * std::fabs(e));
      max_abs = std::max(max_abs, err);
      if (e != 0) max_rel = std::max(max_rel, err / std::fabs(e));
    }
    const Comparison c = compare_tensors(got.data(), expected.data(), n, DType::f32, tol);
    EXPECT_EQ(c.mismatches, outside) << "n = " << n;
    EXPECT_EQ(c.max_abs_err, max_abs) << "n = " << n;
    EXPECT_EQ(c.max_rel_err, max_rel) << "n = " << n;
    // All within (got = expected except a last element just inside): the fast pass's own maxima.
    std::vector<float> same = expected;
    same[n - 1] = float(double(expected[n - 1]) + 0.5 * (tol.atol + tol.rtol * std::fabs(double(expected[n - 1]))));
    const Comparison ok = compare_tensors(same.data(), expected.data(), n, DType::f32, tol);
    EXPECT_TRUE(ok.passed()) << "n = " << n;
    EXPECT_EQ(ok.max_abs_err, std::fabs(double(same[n - 1]) - double(expected[n - 1]))) << "n = " << n;
    // A NaN anywhere, the tail included, is a mismatch.
    same[n / 2] = NAN;
    EXPECT_EQ(compare_tensors(same.data(), expected.data(), n, DType::f32, tol).non_finite, 1u) << "n = " << n;
  }
}

}  // namespace opbench
