// The lint against workloads broken on purpose (tests/lint_fixtures): each must fail the check
// meant to catch it, and the sound one must pass.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "cli_runner.h"

namespace opbench::testing {
namespace {

nlohmann::json lint_fixture(const std::string& id, int* exit_code) {
  auto dir = scratch_dir("lint-" + id);
  setenv("OPBENCH_WORKLOADS", (source_dir() / "tests" / "lint_fixtures").c_str(), 1);
  CliRun run = run_cli({"lint", "--workloads", id, "--json", (dir / "lint.json").string()});
  unsetenv("OPBENCH_WORKLOADS");
  *exit_code = run.exit_code;
  nlohmann::json all = read_json(dir / "lint.json");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(all.size(), 1u) << run.output;
  return all.empty() ? nlohmann::json{} : all[0];
}

std::set<std::string> failed_checks(const nlohmann::json& report) {
  std::set<std::string> failed;
  for (const auto& f : report["findings"])
    if (f["failed"].get<bool>()) failed.insert(f["check"].get<std::string>());
  return failed;
}

TEST(Lint, SoundWorkloadPasses) {
  int exit_code = -1;
  auto r = lint_fixture("lint_sound", &exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_TRUE(r["passed"].get<bool>()) << r.dump(2);
}

TEST(Lint, ConstantOutputIsCaught) {
  int exit_code = -1;
  auto failed = failed_checks(lint_fixture("lint_constant_output", &exit_code));
  EXPECT_EQ(exit_code, 1);
  EXPECT_TRUE(failed.count("varies_across_elements"));
  EXPECT_TRUE(failed.count("varies_across_seeds"));
  EXPECT_TRUE(failed.count("constant_output_fails"));
}

TEST(Lint, DeadInputIsCaught) {
  int exit_code = -1;
  auto r = lint_fixture("lint_dead_input", &exit_code);
  EXPECT_EQ(exit_code, 1);
  EXPECT_EQ(failed_checks(r), std::set<std::string>{"every_input_matters"}) << r.dump(2);
}

TEST(Lint, WrongFlopFormulaIsCaught) {
  int exit_code = -1;
  auto r = lint_fixture("lint_wrong_flops", &exit_code);
  EXPECT_EQ(failed_checks(r), std::set<std::string>{"flop_formula"}) << r.dump(2);
  EXPECT_NEAR(r["formula_flops"].get<double>() / r["counted_operations"].get<double>(), 10.0, 0.01);
}

TEST(Lint, OutputSmallEnoughForZerosToPassIsCaught) {
  int exit_code = -1;
  auto failed = failed_checks(lint_fixture("lint_tiny_output", &exit_code));
  EXPECT_TRUE(failed.count("zero_output_fails"));
}

}  // namespace
}  // namespace opbench::testing
