// The tuner through the CLI: it measures every point once, stores it, and a second run measures
// nothing again; `eval --impl` of a tuned source would pick the best point (tested via the store).
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli_runner.h"
#include "core/files.h"
#include "core/hash.h"
#include "search/result_store.h"

namespace opbench::testing {
namespace {

TEST(Tune, MeasuresEachPointOnceAndResumes) {
  auto dir = scratch_dir("tune");
  const std::string db = (dir / "store.sqlite").string();
  const std::string kernel = (source_dir() / "tests" / "kernels" / "gemm_tunable.cpp").string();
  std::vector<std::string> args{"tune", "8p", kernel, "--size", "test", "--strategy", "exhaustive", "--budget", "4",
                                "--max-time", "0.3", "--max-memory", "32M", "--db", db, "--threads", "1", "--isa", "x86-64-v3"};
  CliRun first = run_cli(args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("4 measured now, 0 from the store"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("stopped: budget"), std::string::npos) << first.output;
  // Every stored point was held against this machine's roofline floor, as in eval and run: an
  // impossibly fast point is untrusted, never the winner.
  {
    ResultStore store(db);
    const StoreKey key{ResultStore::machine_key(1, "x86-64-v3"), "8p_GEMM", "test", sha256_hex(read_file(kernel))};
    const auto points = store.all(key);
    ASSERT_EQ(points.size(), 4u);
    for (const auto& p : points)
      EXPECT_GT(nlohmann::json::parse(p.result_json)["integrity"]["roofline_floor_ms"].get<double>(), 0) << p.result_json.substr(0, 400);
  }

  // The same budget again: the first four come from the store, two more are measured.
  CliRun second = run_cli(args);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("2 measured now, 4 from the store"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("stopped: search complete"), std::string::npos) << second.output;

  // The whole space is known now: a third run measures nothing.
  CliRun third = run_cli(args);
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_NE(third.output.find("0 measured now, 6 from the store"), std::string::npos) << third.output;
  EXPECT_NE(third.output.find("best: "), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Tune, BeamStartsFromDefaultsAndRefusesKernelsWithoutParameters) {
  auto dir = scratch_dir("tune-beam");
  const std::string db = (dir / "store.sqlite").string();
  CliRun beam = run_cli({"tune", "8p", (source_dir() / "tests" / "kernels" / "gemm_tunable.cpp").string(), "--size", "test",
                         "--strategy", "beam", "--max-time", "0.3", "--max-memory", "32M", "--db", db});
  ASSERT_EQ(beam.exit_code, 0) << beam.output;
  EXPECT_NE(beam.output.find("BLOCK_K=32 ROWS_PER_TASK=1"), std::string::npos) << "the defaults are the first point";
  CliRun none = run_cli({"tune", "8p", (source_dir() / "tests" / "kernels" / "gemm_correct.cpp").string(), "--size", "test", "--db", db});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("declares no tunable parameters"), std::string::npos) << none.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace opbench::testing
