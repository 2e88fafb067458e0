#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
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

// The harness fills large tensors a chunk at a time (fill_input_set): each chunk must hold exactly
// the values the whole-tensor fill puts there, in both float types.
TEST(Inputs, ARangeHoldsWhatTheWholeFillPutsThere) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    TensorInstance t = tensor({3001, 7}, "normal", {{"mean", 0}, {"std", 1}});
    t.dtype = dtype;
    const size_t elem = dtype_size(dtype);
    std::vector<std::byte> whole(t.bytes()), parts(t.bytes());
    fill_input(whole.data(), t, 7, 2, 3);
    for (uint64_t b = 0; b < t.numel(); b += 4099)
      fill_input_range(parts.data() + b * elem, t, 7, 2, b, std::min<uint64_t>(t.numel(), b + 4099), 2);
    EXPECT_EQ(std::memcmp(whole.data(), parts.data(), whole.size()), 0) << dtype_name(dtype);
  }
  EXPECT_TRUE(element_wise(tensor({4}, "normal", {{"mean", 0}, {"std", 1}})));
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

namespace opbench {

TEST(Inputs, ToeplitzDependsOnlyOnTheDiagonal) {
  TensorInstance t;
  t.name = "bias";
  t.shape = {2, 5, 5};
  t.init.dist = "toeplitz_normal";
  t.init.params = {{"std", 1.0}};
  std::vector<float> v(t.numel());
  fill_input(v.data(), t, 9, 0, 1);
  EXPECT_EQ(v[0 * 25 + 3 * 5 + 1], v[0 * 25 + 4 * 5 + 2]);  // i - j = 2 in head 0
  EXPECT_NE(v[0 * 25 + 3 * 5 + 1], v[1 * 25 + 3 * 5 + 1]);  // another head, another table
  EXPECT_NE(v[0 * 25 + 3 * 5 + 1], v[0 * 25 + 3 * 5 + 2]);
}

TEST(Inputs, MetadataGeneratorsKeepTheirPromises) {
  TensorInstance sizes;
  sizes.name = "group_sizes";
  sizes.dtype = DType::i32;
  sizes.shape = {16};
  sizes.init.dist = "partition";
  sizes.init.params = {{"total", 1000}, {"empty", 3}, {"skew", 1.0}};
  std::vector<int32_t> g(16);
  fill_input(g.data(), sizes, 4, 0, 1);
  EXPECT_EQ(std::accumulate(g.begin(), g.end(), 0), 1000);
  EXPECT_GE(std::count(g.begin(), g.end(), 0), 3);
  EXPECT_GT(*std::max_element(g.begin(), g.end()), 2 * 1000 / 16) << "sizes must be ragged";

  TensorInstance pages;
  pages.name = "page_indices";
  pages.dtype = DType::i32;
  pages.shape = {4, 8};
  pages.init.dist = "permutation";
  std::vector<int32_t> p(32);
  fill_input(p.data(), pages, 4, 1, 1);
  std::vector<int32_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(sorted[size_t(i)], i);
  EXPECT_NE(p, sorted) << "a shuffled page table";

  // The fields of one ragged batch agree with each other for one set seed.
  auto field = [](int f, std::vector<int64_t> shape) {
    TensorInstance t;
    t.name = "ragged";
    t.dtype = DType::i32;
    t.shape = shape;
    t.init.dist = "ragged_batch";
    t.init.params = {{"field", double(f)}, {"tokens", 200}, {"slots", 16}, {"max_kv", 256}, {"page_size", 16}, {"chunk", 48}, {"pad_tokens", 10}};
    return t;
  };
  std::vector<int32_t> kv(16), cu(17), n(1);
  fill_input(kv.data(), field(0, {16}), 77, 3, 1);
  fill_input(cu.data(), field(1, {17}), 77, 4, 1);
  fill_input(n.data(), field(2, {1}), 77, 5, 1);
  const int32_t num_seqs = n[0];
  ASSERT_GT(num_seqs, 1);
  ASSERT_LT(num_seqs, 16);
  EXPECT_EQ(cu[0], 0);
  EXPECT_EQ(cu[size_t(num_seqs)], 190) << "live tokens = tokens - pad";
  for (int i = 0; i < num_seqs; ++i) {
    const int32_t q_len = cu[size_t(i) + 1] - cu[size_t(i)];
    EXPECT_GE(q_len, 1);
    EXPECT_GE(kv[size_t(i)], q_len);
    EXPECT_LE(kv[size_t(i)], 256);
  }
  EXPECT_GT(kv[size_t(num_seqs)], 0) << "the inactive slot has a real length";
  EXPECT_EQ(cu[16], 200);
}

}  // namespace opbench

namespace opbench {

// The normal generator's float polynomials against libm's double Box-Muller on the same uniforms:
// element 2k is sqrt(-2 ln u) cos(2 pi v) and 2k+1 the sine, u and v the pair's two uniforms.
TEST(Inputs, NormalsAreBoxMullerToFloatAccuracy) {
  TensorInstance t;
  t.name = "t";
  t.shape = {200001};  // odd: the last element is the cosine half of a pair of its own
  t.init.dist = "normal";
  t.init.params = {{"mean", 0.0}, {"std", 1.0}};
  std::vector<float> v(t.numel());
  const uint64_t set_seed = 99;
  fill_input(v.data(), t, set_seed, 0, 2);
  const uint64_t seed = derive_seed(set_seed, 1);  // tensor index 0
  double worst = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t pair = i / 2;
    const double radius = std::sqrt(-2.0 * std::log(double(float(uniform_open01(seed, 2 * pair)))));
    const double angle = 6.283185307179586 * double(float(uniform_open01(seed, 2 * pair + 1)));
    const double expected = radius * (i % 2 ? std::sin(angle) : std::cos(angle));
    worst = std::max(worst, std::fabs(double(v[i]) - expected) / std::max(1.0, std::fabs(expected)));
  }
  EXPECT_LT(worst, 2e-6);
}

}  // namespace opbench
