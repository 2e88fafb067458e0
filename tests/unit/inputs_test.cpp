#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "workload/inputs.h"

namespace opbench {
namespace {

TensorInstance tensor(std::vector<int64_t> shape, std::string dist, std::map<std::string, double> params) {
  TensorInstance t;
  t.name = "t";
  t.shape = std::move(shape);
  t.init.dist = std::move(dist);
  t.init.params = std::move(params);
  return t;
}

}  // namespace

TEST(Inputs, SameSeedSameValuesWhateverTheThreads) {
  TensorInstance t = tensor({300, 1000}, "normal", {{"mean", 0}, {"std", 1}});
  std::vector<float> a(t.numel()), b(t.numel()), c(t.numel());
  fill_input(a.data(), t, 42, 0, 1);
  fill_input(b.data(), t, 42, 0, 4);
  fill_input(c.data(), t, 43, 0, 2);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * 4), 0);
}

TEST(Inputs, NormalAndUniformHaveTheirMoments) {
  TensorInstance n = tensor({200000}, "normal", {{"mean", 1.0}, {"std", 0.1}});
  std::vector<float> v(n.numel());
  fill_input(v.data(), n, 7, 0, 2);
  double sum = 0, sq = 0;
  for (float x : v) sum += x, sq += x * x;
  double mean = sum / double(v.size()), var = sq / double(v.size()) - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.002);
  EXPECT_NEAR(std::sqrt(var), 0.1, 0.002);

  TensorInstance u = tensor({200000}, "uniform", {{"low", -2}, {"high", 2}});
  fill_input(v.data(), u, 7, 0, 2);
  float lo = 10, hi = -10;
  for (float x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, -2.0f);
  EXPECT_LT(hi, 2.0f);
  EXPECT_LT(lo, -1.99f);
}

TEST(Inputs, RowScaledNormalSpansItsDecades) {
  TensorInstance t = tensor({64, 8, 256}, "row_scaled_normal", {{"row_dims", 2}, {"scale_low", 1e-2}, {"scale_high", 1e2}});
  std::vector<float> v(t.numel());
  fill_input(v.data(), t, 3, 0, 2);
  double smallest = 1e30, largest = 0;
  for (int row = 0; row < 64 * 8; ++row) {
    double sq = 0;
    for (int d = 0; d < 256; ++d) sq += double(v[size_t(row) * 256 + size_t(d)]) * v[size_t(row) * 256 + size_t(d)];
    double rms = std::sqrt(sq / 256);
    smallest = std::min(smallest, rms);
    largest = std::max(largest, rms);
  }
  EXPECT_LT(smallest, 0.05);
  EXPECT_GT(largest, 20);
}

TEST(Inputs, UnknownDistributionIsASpecError) {
  TensorInstance t = tensor({4}, "cauchy", {});
  std::vector<float> v(4);
  EXPECT_THROW(fill_input(v.data(), t, 1, 0, 1), SpecError);
}

}  // namespace opbench
