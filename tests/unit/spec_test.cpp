// Checks every workload folder of the suite: the spec parses, formulas agree with the tensors, and
// the sizes are what the size classes promise.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/error.h"
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

}  // namespace opbench
