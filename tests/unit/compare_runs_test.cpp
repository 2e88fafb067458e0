#include <gtest/gtest.h>

#include "report/compare_runs.h"
#include "report_fixtures.h"

namespace opbench {
namespace {

using testing::made_result;

const ResultDelta& find(const std::vector<ResultDelta>& ds, const std::string& w, const std::string& k) {
  for (const auto& d : ds)
    if (d.workload == w && d.impl == k) return d;
  throw std::runtime_error("no delta for " + w);
}

TEST(CompareRuns, SignificantOnlyWhenIntervalsDoNotOverlap) {
  std::vector<Result> a{made_result("8p", "expert", 10, 2.0, 1.95, 2.05), made_result("12p", "expert", 10, 1.5, 1.4, 1.6),
                        made_result("1p", "expert", 10, 3.0, 2.9, 3.1)};
  std::vector<Result> b{made_result("8p", "expert", 8, 2.5, 2.4, 2.6),    // faster: [2.4,2.6] above [1.95,2.05]
                        made_result("12p", "expert", 9, 1.65, 1.55, 1.75),  // 10% higher, but the intervals overlap
                        made_result("1p", "expert", 12, 2.5, 2.45, 2.55)};  // slower
  const auto ds = compare_results(a, b);
  EXPECT_EQ(find(ds, "8p", "expert").verdict, "faster");
  EXPECT_NEAR(find(ds, "8p", "expert").speedup_ratio, 1.25, 1e-12);
  EXPECT_NEAR(find(ds, "8p", "expert").time_ratio, 0.8, 1e-12);
  EXPECT_EQ(find(ds, "12p", "expert").verdict, "same");
  EXPECT_EQ(find(ds, "1p", "expert").verdict, "slower");
}

TEST(CompareRuns, StatusChangesAndMissingResults) {
  Result broken = made_result("8p", "expert", 10, 2.0, 1.9, 2.1);
  broken.status = Status::incorrect;
  std::vector<Result> a{made_result("8p", "expert", 10, 2.0, 1.9, 2.1), made_result("2p", "expert", 10, 2, 1.9, 2.1)};
  std::vector<Result> b{broken, made_result("3p", "expert", 10, 2, 1.9, 2.1)};
  const auto ds = compare_results(a, b);
  EXPECT_EQ(find(ds, "8p", "expert").verdict, "status changed");
  EXPECT_EQ(find(ds, "2p", "expert").verdict, "only in A");
  EXPECT_EQ(find(ds, "3p", "expert").verdict, "only in B");
  ReportTable t = compare_table(ds, "A", "B");
  EXPECT_EQ(t.rows.size(), 3u);
}

TEST(CompareRuns, SameKindsOnlyArePaired) {
  std::vector<Result> a{made_result("8p", "baseline", 10, 1, 0.9, 1.1)};
  std::vector<Result> b{made_result("8p", "expert", 5, 2, 1.9, 2.1)};
  const auto ds = compare_results(a, b);
  ASSERT_EQ(ds.size(), 2u);
}

}  // namespace
}  // namespace opbench
