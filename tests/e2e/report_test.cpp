// opbench calibrate, report and compare, driven as a user drives them.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../unit/report_fixtures.h"
#include "cli_runner.h"
#include "core/files.h"
#include "core/json_io.h"
#include "search/beam_search.h"

namespace opbench::testing {
namespace {

namespace fs = std::filesystem;

// Profiles go to a folder of the test's own, never the user's cache.
struct ProfileDir {
  fs::path dir;
  explicit ProfileDir(const fs::path& d) : dir(d) { ::setenv("OPBENCH_PROFILE_DIR", d.c_str(), 1); }
  ~ProfileDir() { ::unsetenv("OPBENCH_PROFILE_DIR"); }
};

void write_result(const fs::path& path, const Result& r) { write_json_atomic(path, to_json(r)); }

TEST(CalibrateCommand, QuickProfileIsStoredAndPrinted) {
  const fs::path dir = scratch_dir("calibrate");
  ProfileDir profiles(dir / "profiles");
  CliRun c = run_cli({"calibrate", "--quick", "--threads", "1", "--json", (dir / "p.json").string()}, 120);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("fp32 FMA GFLOP/s"), std::string::npos);
  const auto j = read_json(dir / "p.json");
  EXPECT_EQ(j.at("schema"), "opbench.machine_profile");
  // The default is the host's highest named level, the one run and eval use.
  __builtin_cpu_init();
  EXPECT_EQ(j.at("isa_level"), __builtin_cpu_supports("avx512f") ? "x86-64-v4" : "x86-64-v3");
  CliRun v3 = run_cli({"calibrate", "--quick", "--threads", "1", "--isa", "x86-64-v3", "--json", (dir / "v3.json").string()}, 120);
  ASSERT_EQ(v3.exit_code, 0) << v3.output;
  EXPECT_EQ(read_json(dir / "v3.json").at("isa_level"), "x86-64-v3");
  EXPECT_TRUE(fs::exists(dir / "profiles" / (j.at("id").get<std::string>() + ".json")));
  EXPECT_EQ(run_cli({"calibrate", "--isa", "x86-64-v9"}).exit_code, 2);
  EXPECT_EQ(run_cli({"calibrate", "--threads", "100000"}).exit_code, 2);
  fs::remove_all(dir);
}

TEST(EvalCommand, ResultCarriesItsRooflinePositionAndFormats) {
  const fs::path dir = scratch_dir("eval-roofline");
  ProfileDir profiles(dir / "profiles");
  CliRun e = run_cli({"eval", "12p", "--impl", "baseline", "--size", "test", "--max-time", "0.2", "--trials", "1", "--format", "json"}, 300);
  ASSERT_EQ(e.exit_code, 0) << e.output;
  // stdout and stderr are interleaved here: the JSON document is the part from the first '{'.
  const auto j = nlohmann::json::parse(e.output.substr(e.output.find("{\n")));
  EXPECT_EQ(j.at("schema"), "opbench.report");
  const auto& roof = j.at("results").at(0).at("roofline");
  EXPECT_GT(roof.at("floor_ms").get<double>(), 0);
  EXPECT_EQ(roof.at("profile_id"), j.at("machine_profile").at("id"));
  EXPECT_EQ(roof.at("bound"), "memory") << roof.dump(2) << "\n" << j.at("machine_profile").dump(2);  // RMSNorm: 0.5 FLOP/B
  fs::remove_all(dir);
}

TEST(ReportCommand, RendersSavedResultsInEveryFormat) {
  const fs::path dir = scratch_dir("report");
  ProfileDir profiles(dir / "profiles");
  Result base = made_result("8p", "baseline", 20, 1, 0.98, 1.02, 2e9, 1e8);
  Result expert = made_result("8p", "expert", 12, 1.66, 1.6, 1.7, 2e9, 1e8);
  expert.kernel_output = "<script>alert(1)</script>";
  write_result(dir / "base.json", base);
  write_result(dir / "expert.json", expert);
  nlohmann::json run = stamp_schema({{"results", {to_json(base), to_json(expert)}}, {"machine_profile", to_json(made_profile())}}, "opbench.run");
  fs::create_directories(dir / "run");
  write_json_atomic(dir / "run" / "results.json", run);

  CliRun csv = run_cli({"report", (dir / "run").string(), "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  EXPECT_NE(csv.output.find("workload,impl,status,median ms"), std::string::npos);
  EXPECT_NE(csv.output.find("8p,expert,correct,12,"), std::string::npos);

  CliRun files = run_cli({"report", (dir / "base.json").string(), (dir / "expert.json").string(), "--html", (dir / "r.html").string(), "--md",
                          (dir / "r.md").string()});
  ASSERT_EQ(files.exit_code, 0) << files.output;
  const std::string html = read_file(dir / "r.html");
  EXPECT_EQ(html.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)"), std::string::npos);
  EXPECT_NE(read_file(dir / "r.md").find("| 8p | expert | correct |"), std::string::npos);

  // The run folder carries its profile: the roofs are drawn.
  CliRun with_roofs = run_cli({"report", (dir / "run").string(), "--format", "html"});
  EXPECT_NE(with_roofs.output.find("class=\"roof\""), std::string::npos);

  EXPECT_EQ(run_cli({"report", (dir / "missing").string()}).exit_code, 2);
  write_text_atomic(dir / "other.json", "{\"schema\": \"something.else\"}");
  CliRun other = run_cli({"report", (dir / "other.json").string()});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.output.find("not an opbench result"), std::string::npos);
  EXPECT_EQ(run_cli({"report", (dir / "run").string(), "--format", "xml"}).exit_code, 2);
  fs::remove_all(dir);
}

// A search --out folder as opbench search leaves it: run.json, and per workload state.json,
// summary.json and candidates/<key>.json.
void fake_search(const fs::path& dir, const std::string& label, double best) {
  fs::create_directories(dir / "8p" / "candidates");
  SearchSummary s;
  s.workload = "8p";
  s.proposer = label;
  s.evaluated = 3;
  s.correct = 2;
  s.best_speedup = best;
  s.best_source = (dir / "8p" / "candidates" / "abcdef0123456789.cpp").string();
  s.expert_speedup = 2;
  s.build_s = 3;
  s.eval_s = 4;
  s.prompt_tokens = 100;
  write_json_atomic(dir / "run.json", {{"schema", "opbench.search.run"}, {"version", 1}, {"label", label}, {"proposer", label},
                                       {"workloads", {s.to_json()}}});
  write_json_atomic(dir / "8p" / "summary.json", s.to_json());
  nlohmann::json evaluated = nlohmann::json::array();
  evaluated.push_back({{"key", "a"}, {"file", "x"}, {"status", "correct"}, {"iteration", 0}, {"speedup", 1.1}});
  evaluated.push_back({{"key", "b"}, {"file", "y"}, {"status", "incorrect"}, {"iteration", 1}, {"speedup", 0}});
  evaluated.push_back({{"key", "c"}, {"file", "z"}, {"status", "correct"}, {"iteration", 1}, {"speedup", best}});
  write_json_atomic(dir / "8p" / "state.json", {{"schema", "opbench.search.state"}, {"version", 1}, {"evaluated", evaluated}});
  write_result(dir / "8p" / "candidates" / "abcdef0123456789.json", made_result("8p", "candidate", 10, best, best * 0.95, best * 1.05, 2e9, 1e8));
}

TEST(ReportCommand, SearchFoldersGiveProgressCostAndLeaderboard) {
  const fs::path dir = scratch_dir("report-search");
  ProfileDir profiles(dir / "profiles");
  fake_search(dir / "a", "agent-a", 1.5);
  fake_search(dir / "b", "agent-b", 1.8);
  CliRun html = run_cli({"report", (dir / "a").string(), (dir / "b").string(), "--format", "html"});
  ASSERT_EQ(html.exit_code, 0) << html.output;
  EXPECT_NE(html.output.find("Best speedup per iteration"), std::string::npos);
  EXPECT_NE(html.output.find("id=\"leaderboard\""), std::string::npos);
  EXPECT_NE(html.output.find("agent-b"), std::string::npos);
  EXPECT_EQ(std::count(html.output.begin(), html.output.end(), '\n') > 0, true);
  // The best candidate of each search is a result on the scoreboard.
  EXPECT_NE(html.output.find("<title>8p candidate:"), std::string::npos);
  CliRun json = run_cli({"report", (dir / "a").string(), "--format", "json"});
  const auto j = nlohmann::json::parse(json.output);
  const auto& its = j.at("searches").at(0).at("workloads").at(0).at("iterations");
  ASSERT_EQ(its.size(), 2u);
  EXPECT_EQ(its[1].at("evaluated"), 2);
  EXPECT_EQ(its[1].at("correct"), 1);
  EXPECT_DOUBLE_EQ(its[1].at("best_speedup").get<double>(), 1.5);
  fs::remove_all(dir);
}

TEST(CompareCommand, MarksOnlyNonOverlappingIntervalsSignificant) {
  const fs::path dir = scratch_dir("compare");
  ProfileDir profiles(dir / "profiles");
  write_result(dir / "a.json", made_result("8p", "expert", 10, 2.0, 1.95, 2.05));
  write_result(dir / "b.json", made_result("8p", "expert", 8, 2.5, 2.4, 2.6));
  write_result(dir / "c.json", made_result("8p", "expert", 9.8, 2.02, 1.9, 2.1));
  CliRun faster = run_cli({"compare", (dir / "a.json").string(), (dir / "b.json").string()});
  ASSERT_EQ(faster.exit_code, 0) << faster.output;
  EXPECT_NE(faster.output.find("faster"), std::string::npos);
  EXPECT_NE(faster.output.find("1 significantly faster, 0 significantly slower"), std::string::npos);
  CliRun same = run_cli({"compare", (dir / "a.json").string(), (dir / "c.json").string(), "--format", "csv"});
  ASSERT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find(",false,same"), std::string::npos) << same.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace opbench::testing
