// The cpu target's instruction-set levels end to end: the level is in every result, the instruction
// check enforces exactly the chosen level, kernels built at v4 run, and v3 still works as before.
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace opbench::testing {
namespace {

// __builtin_cpu_supports takes only a literal.
bool host_has_v4() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v4");
}
bool host_has_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");
}

// 8p_GEMM at a small shape on one thread, correctness only unless `timed`.
nlohmann::json eval_gemm(const std::string& kernel, const std::vector<std::string>& extra, bool timed = false) {
  auto dir = scratch_dir("isa");
  auto json_path = dir / "result.json";
  std::vector<std::string> args{"eval", "8p_GEMM", (source_dir() / kernel).string(), "--size", "test", "--set", "M=64", "--set",
                                "K=96", "--set", "N=80", "--threads", "1", "--json", json_path.string()};
  if (timed) args.insert(args.end(), {"--max-time", "1"});
  else args.push_back("--no-timing");
  args.insert(args.end(), extra.begin(), extra.end());
  CliRun run = run_cli(args);
  EXPECT_TRUE(std::filesystem::exists(json_path)) << run.output;
  if (!std::filesystem::exists(json_path)) return {};
  nlohmann::json j = read_json(json_path);
  std::filesystem::remove_all(dir);
  return j;
}

TEST(IsaLevels, DefaultIsTheHighestNamedLevelOfTheHost) {
  nlohmann::json r = eval_gemm("tests/kernels/gemm_correct.cpp", {});
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r["status"], "correct") << r["message"];
  EXPECT_EQ(r["isa"], host_has_v4() ? "x86-64-v4" : "x86-64-v3");
}

TEST(IsaLevels, ZmmKernelRunsAndIsCorrectAtV4) {
  if (!host_has_v4()) GTEST_SKIP() << "this CPU has no AVX-512";
  nlohmann::json r = eval_gemm("tests/kernels/gemm_avx512.cpp", {"--isa", "x86-64-v4"}, true);
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r["status"], "correct") << r["message"];
  EXPECT_EQ(r["isa"], "x86-64-v4");
  EXPECT_GT(r["integrity"]["calls_verified"].get<int>(), 10);
  EXPECT_NE(r["build"].dump().find("-march=x86-64-v4"), std::string::npos) << r["build"];
}

TEST(IsaLevels, ZmmKernelIsRejectedAtV3) {
  nlohmann::json r = eval_gemm("tests/kernels/gemm_avx512.cpp", {"--isa", "x86-64-v3"});
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r["status"], "rejected");
  EXPECT_NE(r["message"].get<std::string>().find("AVX-512"), std::string::npos) << r["message"];
  EXPECT_EQ(r["isa"], "x86-64-v3");
}

TEST(IsaLevels, PlainKernelStaysCorrectAtV3) {
  nlohmann::json r = eval_gemm("examples/8p_GEMM/blocked_avx2.cpp", {"--isa", "x86-64-v3"}, true);
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r["status"], "correct") << r["message"];
  EXPECT_EQ(r["isa"], "x86-64-v3");
  EXPECT_NE(r["build"].dump().find("-march=x86-64-v3"), std::string::npos) << r["build"];
}

// The control of the VNNI exploit: with every extension allowed the same kernel builds, runs and is
// correct, so what stops it at v4 is the instruction check.
TEST(IsaLevels, VnniIsAllowedAtNative) {
  if (!host_has_vnni()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  nlohmann::json r = eval_gemm("tests/exploits/avx512_vnni_target_attribute.cpp", {"--isa", "native"});
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r["status"], "correct") << r["message"];
  EXPECT_EQ(r["isa"], "native");
}

TEST(IsaLevels, UnknownLevelIsAUsageError) {
  CliRun run = run_cli({"eval", "8p_GEMM", "--impl", "reference", "--size", "test", "--no-timing", "--isa", "avx9000"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("x86-64-v4"), std::string::npos) << run.output;  // names the levels offered
}

}  // namespace
}  // namespace opbench::testing
