// Checks every workload folder of the suite: the spec parses, formulas agree with the tensors, and
// the sizes are what the size classes promise.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/error.h"
#include "workload/generators.h"
#include "workload/inputs.h"
#include "workload/registry.h"

namespace opbench {

class SuiteSpec : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { registry_ = new Registry(Registry::default_root()); }
  static Registry* registry_;
};
Registry* SuiteSpec::registry_ = nullptr;

TEST_F(SuiteSpec, EveryWorkloadHasReferenceAndBaseline) {
  ASSERT_FALSE(registry_->all().empty());
  for (const auto& w : registry_->all()) {
    EXPECT_TRUE(w.has_implementation("reference")) << w.id;
    EXPECT_TRUE(w.has_implementation("baseline")) << w.id;
    EXPECT_FALSE(w.description.empty()) << w.id;
  }
}

TEST_F(SuiteSpec, MinimalBytesFormulaMatchesTheTensors) {
  for (const auto& w : registry_->all()) {
    for (const auto& size : size_classes()) {
      ResolvedWorkload r = resolve_workload(w, size);
      double from_tensors = double(r.input_bytes() + r.output_bytes());
      // Where the bytes a kernel needs depend on drawn values (6p reads only the pages within
      // kv_lens), min_bytes is their expectation and floor_bytes their least: neither above the tensors.
      if (!w.floor_bytes.empty())
        EXPECT_LE(r.min_bytes, from_tensors) << w.id << " at " << size;
      else
        EXPECT_NEAR(r.min_bytes, from_tensors, 1e-9 * from_tensors) << w.id << " at " << size;
    }
  }
}

TEST_F(SuiteSpec, SizesGrowAndTestSizeStaysSmall) {
  for (const auto& w : registry_->all()) {
    ResolvedWorkload test = resolve_workload(w, "test"), cpu = resolve_workload(w, "cpu"), full = resolve_workload(w, "full");
    EXPECT_LT(test.flops, cpu.flops) << w.id;
    EXPECT_LE(cpu.flops, full.flops) << w.id;
    EXPECT_LT(test.input_bytes() + test.output_bytes(), size_t(4) << 20) << w.id << ": test size must stay tiny";
    EXPECT_GE(w.tolerances.count("bf16"), 1u) << w.id;
    EXPECT_GE(test.useful_flops, 0) << w.id;
    EXPECT_LE(test.useful_flops, test.flops * 1.0000001) << w.id;
  }
}

TEST_F(SuiteSpec, EveryInputUsesAKnownDistribution) {
  for (const auto& w : registry_->all()) {
    ResolvedWorkload r = resolve_workload(w, "test");
    for (const auto& t : r.inputs) {
      std::vector<std::byte> buffer(t.bytes());
      EXPECT_NO_THROW(fill_input(buffer.data(), t, 1, 0, 1)) << w.id << "." << t.name;
    }
  }
}

TEST_F(SuiteSpec, NamesMatchCaseInsensitivelyAndByPrefix) {
  EXPECT_EQ(registry_->find("8p").id, "8p_GEMM");
  EXPECT_EQ(registry_->find("8P_gemm").id, "8p_GEMM");
  EXPECT_EQ(registry_->find("12p_rms").id, "12p_RMSNorm");
  EXPECT_THROW(registry_->find("no_such_workload"), UsageError);
  EXPECT_EQ(registry_->select("*p_*").size(), size_t(std::count_if(registry_->all().begin(), registry_->all().end(),
                                                                     [](const WorkloadSpec& w) { return w.id.find("p_") != std::string::npos; })));
  EXPECT_THROW(resolve_workload(registry_->find("8p"), "huge"), UsageError);
  EXPECT_THROW(resolve_workload(registry_->find("8p"), "test", {{"Q", 3}}), UsageError);
  EXPECT_EQ(resolve_workload(registry_->find("8p"), "test", {{"M", 3}}).inputs[0].shape[0], 3);
}

// Where the work depends on drawn values (6p's and 7p's sequence lengths), the roofline floor that
// calls a time impossible is made of floor_flops and floor_bytes, the least work any draw needs, and
// useful_flops / min_bytes are the law's expectation. Both claims are checked on the generators
// themselves: every draw needs at least the floor, and the draws' mean is the expectation.
namespace {
struct DrawnWork {
  double flops = 0, bytes = 0;
};

DrawnWork paged_attention_work(const ResolvedWorkload& r, uint64_t seed) {  // 6p
  const auto& s = r.symbols;
  const int64_t N = int64_t(s.at("N")), PS = int64_t(s.at("PS")), L = PS * int64_t(s.at("PPS"));
  const std::vector<int32_t> kv = lengths_with_edges(N, 1, L, PS, seed);
  double pairs = 0, pages = 0;
  for (int32_t k : kv) {
    pairs += k;
    pages += double((k + PS - 1) / PS);
  }
  const double hq = s.at("Hq"), hkv = s.at("Hkv"), d = s.at("D"), elem = s.at("elem");
  return {4 * hq * d * pairs, (2 * double(N) * hq * d + pages * double(PS) * 2 * hkv * d) * elem + (2 * double(N) + pages) * 4};
}

DrawnWork ragged_paged_attention_work(const ResolvedWorkload& r, uint64_t seed) {  // 7p
  const auto& s = r.symbols;
  const int64_t T = int64_t(s.at("T")), PAD = int64_t(s.at("PAD")), PS = int64_t(s.at("PS"));
  const RaggedBatch b = ragged_batch(T, int64_t(s.at("SLOTS")), PS * int64_t(s.at("PPS")), PS, int64_t(s.at("CHUNK")), PAD, seed);
  double pairs = 0, pages = 0;
  for (int i = 0; i < b.num_seqs; ++i) {
    const double lq = b.cu_q_lens[size_t(i) + 1] - b.cu_q_lens[size_t(i)], lkv = b.kv_lens[size_t(i)];
    pairs += lq * (lkv - lq) + lq * (lq + 1) / 2;  // row r sees keys 0 .. lkv - lq + r
    pages += double((b.kv_lens[size_t(i)] + PS - 1) / PS);
  }
  const double hq = s.at("Hq"), hkv = s.at("Hkv"), d = s.at("D"), elem = s.at("elem");
  return {pairs * hq * (4 * d + 5), (double(2 * T - PAD) * hq * d + pages * double(PS) * 2 * hkv * d) * elem};
}
}  // namespace

TEST_F(SuiteSpec, FloorsHoldForEveryDrawOfDataDependentWork) {
  struct Case {
    const char* id;
    DrawnWork (*work)(const ResolvedWorkload&, uint64_t);
    bool bytes_expected;  // min_bytes is the law's expectation (7p's counts every page: compute-bound)
  };
  for (const Case& c : {Case{"6p", paged_attention_work, true}, Case{"7p", ragged_paged_attention_work, false}}) {
    for (const char* size : {"test", "cpu", "full"}) {
      SCOPED_TRACE(fmt::format("{} at {}", c.id, size));
      const ResolvedWorkload r = resolve_workload(registry_->find(c.id), size);
      EXPECT_LT(r.floor_flops, r.useful_flops);
      const int draws = 400;
      double flops = 0, bytes = 0;
      for (int seed = 1; seed <= draws; ++seed) {
        const DrawnWork w = c.work(r, uint64_t(seed) * 7919);
        ASSERT_GE(w.flops, r.floor_flops) << "seed " << seed;
        ASSERT_GE(w.bytes, r.floor_bytes) << "seed " << seed;
        flops += w.flops / draws;
        bytes += w.bytes / draws;
      }
      EXPECT_NEAR(flops / r.useful_flops, 1.0, 0.05) << "the mean of the draws is not useful_flops";
      if (c.bytes_expected) EXPECT_NEAR(bytes / r.min_bytes, 1.0, 0.05) << "the mean of the draws is not min_bytes";
      EXPECT_LE(bytes, r.min_bytes * 1.05);
    }
  }
}

// A floor above the expectation would make the impossible-time verdict fire on average inputs: the
// spec is refused when it is resolved, with the figures in the message.
TEST_F(SuiteSpec, AFloorAboveTheExpectedWorkIsRefused) {
  WorkloadSpec w = registry_->find("8p");
  w.floor_flops = "4*M*K*N";  // twice the useful work
  EXPECT_THROW(resolve_workload(w, "test"), SpecError);
  w.floor_flops.clear();
  w.floor_bytes = "2*(M*K + K*N + M*N) * elem";
  EXPECT_THROW(resolve_workload(w, "test"), SpecError);
  w.floor_bytes = "0";  // no bytes at all is no floor a kernel must respect
  EXPECT_THROW(resolve_workload(w, "test"), SpecError);
  w.floor_bytes = "(M*K + K*N) * elem";
  EXPECT_NO_THROW(resolve_workload(w, "test"));
}

}  // namespace opbench
