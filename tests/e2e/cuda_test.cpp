// The cuda target through the real CLI. Host-side cases run everywhere nvcc is (this machine, CI):
// kernels build, the import check refuses cuBLAS and CUDA IPC in candidates, a compile error is a
// status, and evaluating without a GPU is a clear usage error. GPU cases (CudaOnGpu.*) skip with the
// reason where no Hopper GPU is visible, and on an H200 check each way a kernel can go wrong.
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace opbench::testing {
namespace {

std::string cuda_kernel(const std::string& name) { return (source_dir() / "tests/kernels/cuda" / name).string(); }

// Why the cuda target cannot run here, or empty.
std::string gpu_missing() {
  CliRun r = run_cli({"targets", "--require", "cuda"});
  return r.exit_code == 0 ? std::string() : r.output;
}

TEST(CudaTarget, ListedWithWhyItCannotRunHere) {
  CliRun r = run_cli({"targets"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cuda"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("*.cu"), std::string::npos) << r.output;
  if (!gpu_missing().empty()) EXPECT_NE(r.output.find("no: "), std::string::npos) << r.output;
}

TEST(CudaTarget, ACandidateThatCallsCublasIsRejectedBeforeItRuns) {
  CliRun r = run_cli({"build", "--target", "cuda", "--workloads", "8p_GEMM", "--kernel", cuda_kernel("gemm_uses_cublas.cu")}, 300);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("rejected"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cublasGemmEx"), std::string::npos) << r.output;
}

TEST(CudaTarget, ACandidateThatOpensCudaIpcIsRejected) {
  CliRun r = run_cli({"build", "--target", "cuda", "--workloads", "8p_GEMM", "--kernel", cuda_kernel("gemm_opens_ipc.cu")}, 300);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cudaIpcOpenMemHandle (not allowed on this target)"), std::string::npos) << r.output;
}

TEST(CudaTarget, ACompileErrorIsAStatusWithNvccsMessage) {
  CliRun r = run_cli({"build", "--target", "cuda", "--workloads", "8p_GEMM", "--kernel", cuda_kernel("gemm_compile_error.cu")}, 300);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("compile_error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cannot be used to initialize"), std::string::npos) << r.output;
}

TEST(CudaTarget, EveryTestKernelThatShouldBuildBuildsAndPassesTheImportCheck) {
  for (const char* k : {"gemm_naive.cu", "gemm_writes_past_end.cu", "gemm_one_nan.cu", "gemm_illegal_address.cu", "gemm_endless_loop.cu",
                        "gemm_writes_input.cu", "gemm_side_stream.cu"}) {
    CliRun r = run_cli({"build", "--target", "cuda", "--workloads", "8p_GEMM", "--kernel", cuda_kernel(k)}, 300);
    EXPECT_EQ(r.exit_code, 0) << k << ":\n" << r.output;
  }
}

TEST(CudaTarget, EvaluatingWithoutAGpuSaysWhyAndExits2) {
  if (gpu_missing().empty()) GTEST_SKIP() << "a GPU is visible here";
  CliRun r = run_cli({"eval", "8p_GEMM", "--target", "cuda", "--impl", "baseline"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot run on this machine"), std::string::npos) << r.output;
  CliRun c = run_cli({"crosscheck", "8p_GEMM"});
  EXPECT_EQ(c.exit_code, 2) << c.output;
}

TEST(CudaTarget, SizeClassesComeFromTheTarget) {
  CliRun r = run_cli({"eval", "8p_GEMM", "--target", "cuda", "--impl", "baseline", "--size", "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cpu"), std::string::npos) << r.output;
}

// ---- On a GPU ---------------------------------------------------------------------------------

struct GpuCase {
  std::string kernel, status, message_contains;
  std::vector<std::string> extra = {};
};
void PrintTo(const GpuCase& c, std::ostream* os) { *os << c.kernel << " -> " << c.status; }

class CudaOnGpu : public ::testing::TestWithParam<GpuCase> {};

TEST_P(CudaOnGpu, KernelGetsItsStatus) {
  if (std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
  const GpuCase& c = GetParam();
  const auto dir = scratch_dir("cuda-eval");
  std::vector<std::string> args{"eval", "8p_GEMM", cuda_kernel(c.kernel), "--target", "cuda", "--size", "test", "--timeout", "5",
                                "--json", (dir / "r.json").string()};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  CliRun r = run_cli(args, 600);
  ASSERT_TRUE(std::filesystem::exists(dir / "r.json")) << r.output;
  const auto j = read_json(dir / "r.json");
  EXPECT_EQ(j["status"], c.status) << j.dump(2);
  const std::string text = j["message"].get<std::string>() + " " + j["correctness"]["reason"].get<std::string>();
  EXPECT_NE(text.find(c.message_contains), std::string::npos) << "expected '" << c.message_contains << "' in: " << text;
  if (c.status == "correct" && j.contains("device")) EXPECT_FALSE(j["device"]["name"].get<std::string>().empty());
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, CudaOnGpu,
    ::testing::Values(GpuCase{"gemm_naive.cu", "correct", "", {"--max-time", "1"}},
                      GpuCase{"gemm_writes_past_end.cu", "incorrect", "past the end", {"--no-timing"}},
                      GpuCase{"gemm_one_nan.cu", "incorrect", "1 of", {"--no-timing"}},
                      GpuCase{"gemm_illegal_address.cu", "runtime_error", "CUDA error", {"--no-timing"}},
                      GpuCase{"gemm_endless_loop.cu", "timeout", "", {"--no-timing"}},
                      GpuCase{"gemm_writes_input.cu", "runtime_error", "inputs", {"--no-timing"}}));

// A kernel whose work escapes the harness stream: correct, but its speedup is not "ok".
TEST(CudaOnGpuTiming, WorkOnAnotherStreamMakesTheSpeedupUnreliable) {
  if (std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratch_dir("cuda-side");
  CliRun r = run_cli({"eval", "8p_GEMM", cuda_kernel("gemm_side_stream.cu"), "--target", "cuda", "--size", "test", "--set", "M=512", "--set",
                      "K=512", "--set", "N=512", "--max-time", "2", "--json", (dir / "r.json").string()},
                     600);
  const auto j = read_json(dir / "r.json");
  ASSERT_EQ(j["status"], "correct") << j.dump(2);
  EXPECT_EQ(j["speedup"]["standing"], "unreliable") << j["timing"].dump(2);
  std::filesystem::remove_all(dir);
}

// The A/A check on the GPU: the baseline against itself.
TEST(CudaOnGpuTiming, BaselineAgainstItselfIsNearOne) {
  if (std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratch_dir("cuda-aa");
  CliRun r = run_cli({"eval", "8p_GEMM", "--target", "cuda", "--impl", "baseline", "--size", "test", "--set", "M=2048", "--set", "K=2048",
                      "--set", "N=2048", "--max-time", "3", "--json", (dir / "r.json").string()},
                     600);
  const auto j = read_json(dir / "r.json");
  ASSERT_EQ(j["status"], "correct") << j.dump(2);
  EXPECT_NEAR(j["speedup"]["vs_baseline"].get<double>(), 1.0, 0.05) << j["timing"].dump(2);
  EXPECT_TRUE(j["device"]["l2_flushed"].get<bool>());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace opbench::testing
