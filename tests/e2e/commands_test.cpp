// list, show, run and dump through the real CLI.
#include <gtest/gtest.h>

#include <cstring>

#include "cli_runner.h"
#include "core/npy.h"

namespace opbench::testing {
namespace {

TEST(List, ShowsEveryWorkloadAsTableAndJson) {
  CliRun table = run_cli({"list"});
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("8p_GEMM"), std::string::npos);
  CliRun json = run_cli({"list", "--json"});
  ASSERT_EQ(json.exit_code, 0);
  nlohmann::json list = nlohmann::json::parse(json.output);
  ASSERT_GE(list.size(), 2u);
  for (const auto& w : list) {
    EXPECT_TRUE(w["flops"].contains("test"));
    EXPECT_TRUE(w["flops"].contains("cpu"));
    EXPECT_TRUE(w["flops"].contains("full"));
    EXPECT_FALSE(w["category"].get<std::string>().empty());
  }
}

TEST(Show, PrintsShapesWorkAndReferenceSource) {
  CliRun show = run_cli({"show", "12p", "--size", "test"});
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("12p_RMSNorm"), std::string::npos);
  EXPECT_NE(show.output.find("FLOP/B"), std::string::npos);
  EXPECT_NE(show.output.find("ob_run"), std::string::npos) << "the reference source must be shown";
  EXPECT_NE(show.output.find("B=2"), std::string::npos);
}

TEST(Run, EvaluatesManyAndWritesJson) {
  auto dir = scratch_dir("run");
  CliRun run = run_cli({"run", "--workloads", "8p,12p", "--size", "test", "--impl", "baseline", "--max-time", "0.5", "--out", dir.string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("geomean speedup"), std::string::npos) << run.output;
  nlohmann::json all = read_json(dir / "results.json");
  EXPECT_EQ(all["schema"], "opbench.run");
  ASSERT_EQ(all["results"].size(), 2u);
  for (const auto& r : all["results"]) EXPECT_EQ(r["status"], "correct");
  EXPECT_TRUE(std::filesystem::exists(dir / "8p_GEMM.baseline.json"));
  EXPECT_EQ(all["summary"]["correct"], 2);
  std::filesystem::remove_all(dir);
}

// A --set that a selected workload cannot take stops the run before anything runs or is written:
// 11p's group sizes cannot be drawn with one group, 12p has no G at all.
TEST(Run, ASetOneWorkloadCannotTakeIsAUsageErrorBeforeAnythingRuns) {
  auto dir = scratch_dir("run-bad-set");
  std::filesystem::remove_all(dir);
  CliRun run = run_cli({"run", "--workloads", "14p,11p", "--size", "test", "--impl", "baseline", "--no-timing", "--set", "G=1", "--out",
                        dir.string()});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("cannot be drawn"), std::string::npos) << run.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "results.json")) << run.output;
  CliRun unknown = run_cli({"run", "--workloads", "12p,8p", "--size", "test", "--impl", "baseline", "--set", "M=64", "--out", dir.string()});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("no shape symbol"), std::string::npos) << unknown.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "results.json")) << unknown.output;
  std::filesystem::remove_all(dir);
}

TEST(Dump, WritesInputsAndReferenceOutputsReproducibly) {
  auto a = scratch_dir("dump-a"), b = scratch_dir("dump-b"), c = scratch_dir("dump-c");
  ASSERT_EQ(run_cli({"dump", "8p", "--seed", "5", "--out", a.string()}).exit_code, 0);
  ASSERT_EQ(run_cli({"dump", "8p", "--seed", "5", "--out", b.string()}).exit_code, 0);
  ASSERT_EQ(run_cli({"dump", "8p", "--seed", "6", "--out", c.string()}).exit_code, 0);
  nlohmann::json manifest = read_json(a / "manifest.json");
  EXPECT_EQ(manifest["workload"], "8p_GEMM");
  ASSERT_EQ(manifest["inputs"].size(), 2u);
  ASSERT_EQ(manifest["outputs"].size(), 1u);

  DType dtype;
  std::vector<int64_t> shape_a, shape_b;
  auto A = read_npy(a / "A.npy", &dtype, &shape_a);
  auto B = read_npy(a / "B.npy", &dtype, &shape_b);
  std::vector<int64_t> shape_c;
  auto C = read_npy(a / "C.npy", &dtype, &shape_c);
  ASSERT_EQ(shape_a.size(), 2u);
  const int64_t M = shape_a[0], K = shape_a[1], N = shape_b[1];
  EXPECT_EQ(shape_c, (std::vector<int64_t>{M, N}));
  // The dumped output is the reference's C = A·B of the dumped inputs.
  const float* a_data = reinterpret_cast<const float*>(A.data());
  const float* b_data = reinterpret_cast<const float*>(B.data());
  const float* c_data = reinterpret_cast<const float*>(C.data());
  for (int64_t m : {int64_t(0), M - 1})
    for (int64_t n : {int64_t(0), N / 2, N - 1}) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += double(a_data[m * K + k]) * b_data[k * N + n];
      EXPECT_NEAR(c_data[m * N + n], acc, 1e-5);
    }
  std::vector<int64_t> s;
  EXPECT_EQ(read_npy(b / "A.npy", &dtype, &s), A) << "the same seed must give the same inputs";
  EXPECT_NE(read_npy(c / "A.npy", &dtype, &s), A) << "another seed must give other inputs";
  for (auto& d : {a, b, c}) std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace opbench::testing
