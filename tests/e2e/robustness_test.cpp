// Robustness (issue 12): bad input, faults and odd sizes never lose data or mislead. One test per
// class, through the real CLI where a user would meet it.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <fstream>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "cli_runner.h"
#include "core/files.h"
#include "core/utf8.h"
#include "harness/evaluate.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::testing {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Sets an environment variable for the life of the object (the CLI runs inherit it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Files under `dir` whose name marks them as a temporary of an atomic write or a build.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(".tmp") || name.ends_with(".build")) out.push_back(name);
  }
  return out;
}

// A copy of 12p_RMSNorm under a new id, its spec edited by `edit` (the id line is rewritten).
void variant(const fs::path& suite, const std::string& id, const std::function<std::string(std::string)>& edit) {
  const fs::path from = source_dir() / "workloads" / "12p_RMSNorm";
  fs::create_directories(suite / id);
  for (const char* f : {"reference.cpp", "baseline.cpp"}) fs::copy_file(from / f, suite / id / f);
  std::string toml = read_file(from / "workload.toml");
  toml = std::regex_replace(toml, std::regex("id = \"12p_RMSNorm\""), "id = \"" + id + "\"");
  write(suite / id / "workload.toml", edit(toml));
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// 12p and a set of workloads whose spec does not load, one kind of mistake each.
fs::path suite_with_broken_specs(const std::string& name) {
  const fs::path suite = scratch_dir(name);
  fs::copy(source_dir() / "workloads" / "12p_RMSNorm", suite / "12p_RMSNorm", fs::copy_options::recursive);
  variant(suite, "90x_Syntax", [](std::string t) { return replace(t, "[sizes.cpu]", "[sizes.cpu]\nthis is = = not toml"); });
  variant(suite, "91x_NanTolerance", [](std::string t) { return replace(t, "atol = 1e-5", "atol = nan"); });
  variant(suite, "92x_UnknownDist", [](std::string t) { return replace(t, "dist = \"normal\"", "dist = \"zipf\""); });
  variant(suite, "93x_DivideByZero", [](std::string t) { return replace(t, "flops = \"4*B*S*D + B*S\"", "flops = \"4*B*S*D/(B-B)\""); });
  variant(suite, "94x_InfiniteSize", [](std::string t) { return replace(t, "B = 2\n", "B = inf\n"); });
  variant(suite, "95x_NegativeWork", [](std::string t) { return replace(t, "min_bytes = \"(2*B*S*D + D) * elem\"", "min_bytes = \"-1\""); });
  return suite;
}

// ---------------------------------------------------------------- numbers at every boundary

TEST(Robustness, NumbersAreParsedStrictlyAndUsageErrorsNameTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string names;  // what the message must mention
  };
  const std::vector<Case> cases = {
      {{"show", "8p", "--set", "M=5abc"}, "--set M"},
      {{"show", "8p", "--set", "M=inf"}, "--set M"},
      {{"show", "8p", "--set", "M=nan"}, "--set M"},
      {{"show", "8p", "--set", "M=1e30"}, "--set M"},
      {{"show", "8p", "--set", "M=0"}, "--set M"},
      {{"show", "8p", "--set", "M=-4"}, "--set M"},
      {{"show", "8p", "--set", "M=2.5"}, "--set M"},
      {{"dump", "8p", "--out", "/tmp/never", "--set", "M=1e400"}, "--set M"},
      {{"eval", "8p", "--impl", "baseline", "--timeout", "nan"}, "--timeout"},
      {{"eval", "8p", "--impl", "baseline", "--timeout", "inf"}, "--timeout"},
      {{"eval", "8p", "--impl", "baseline", "--timeout", "0"}, "--timeout"},
      {{"eval", "8p", "--impl", "baseline", "--max-time", "-1"}, "--max-time"},
      {{"eval", "8p", "--impl", "baseline", "--max-time", "1e400"}, "--max-time"},
      {{"eval", "8p", "--impl", "baseline", "--max-time", "3s"}, "--max-time"},
      {{"eval", "8p", "--impl", "baseline", "--threads", "0"}, "--threads"},
      {{"eval", "8p", "--impl", "baseline", "--threads", "-1"}, "--threads"},
      {{"eval", "8p", "--impl", "baseline", "--threads", "100000"}, "--threads"},
      {{"eval", "8p", "--impl", "baseline", "--threads", "99999999999999999999"}, "--threads"},
      {{"run", "--workloads", "8p", "--threads", "1.5"}, "--threads"},
      {{"eval", "8p", "--impl", "baseline", "--trials", "0"}, "--trials"},
      {{"eval", "8p", "--impl", "baseline", "--trials", "2x"}, "--trials"},
      {{"tune", "8p", "--impl", "expert", "--time", "nan"}, "--time"},
      {{"tune", "8p", "--impl", "expert", "--budget", "-3"}, "--budget"},
      {{"gemm-floor", "--limit", "nan"}, "--limit"},
      {{"gemm-floor", "--threads", "100000"}, "--threads"},
      {{"prompt", "8p", "--phase", "plan", "--menu-dropout", "nan"}, "--menu-dropout"},
      {{"search", "8p", "--proposer", "tune", "--menu-dropout", "inf"}, "--menu-dropout"},
      {{"search", "8p", "--proposer", "tune", "--repairs", "-1"}, "--repairs"},
      {{"search", "8p", "--proposer", "tune", "--beam-width", "0"}, "--beam-width"},
      {{"dump", "8p", "--out", "/tmp/never", "--seed", "-1"}, "--seed"},
      {{"tune", "8p", "--impl", "expert", "--seed", "18446744073709551616"}, "--seed"},
      {{"prompt", "8p", "--seed", "7x"}, "--seed"},
      {{"eval", "8p", "--impl", "baseline", "--max-memory", " 2G"}, "--max-memory"},
      {{"eval", "8p", "--impl", "baseline", "--max-memory", "2X"}, "--max-memory"},
      {{"eval", "8p", "--impl", "baseline", "--max-memory", "0"}, "--max-memory"},
      {{"eval", "8p", "--impl", "baseline", "--max-eval-time", "nan"}, "--max-eval-time"},
  };
  for (const Case& c : cases) {
    CliRun run = run_cli(c.args, 120);
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    EXPECT_EQ(run.exit_code, 2) << shown << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, c.names)) << shown << "\n" << run.output;
  }
}

TEST(Robustness, AShapeWhoseBytesExceedTheMachineIsAUsageErrorNamingTheSymbol) {
  // 2^40 passes the per-value check; M·K·4 bytes then overflows what the machine (or 64 bits) holds.
  CliRun run = run_cli({"eval", "8p", "--impl", "baseline", "--size", "test", "--no-timing", "--set", "M=1099511627776"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "M=")) << run.output;
  EXPECT_TRUE(contains(run.output, "memory") || contains(run.output, "64 bits")) << run.output;
}

// ---------------------------------------------------------------- workloads loaded in isolation

TEST(Robustness, ABrokenSpecIsListedWithFileAndLineAndAffectsOnlyItsWorkload) {
  const fs::path suite = suite_with_broken_specs("broken-list");
  ScopedEnv env("OPBENCH_WORKLOADS", suite.string());
  CliRun list = run_cli({"list"});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_TRUE(contains(list.output, "12p_RMSNorm")) << list.output;
  EXPECT_TRUE(contains(list.output, "6 broken")) << list.output;
  // A syntax error and a bad value point at their line in their file.
  EXPECT_TRUE(std::regex_search(list.output, std::regex("90x_Syntax/workload.toml:[0-9]+"))) << list.output;
  EXPECT_TRUE(std::regex_search(list.output, std::regex("91x_NanTolerance/workload.toml:[0-9]+: tolerance.f32.atol"))) << list.output;
  EXPECT_TRUE(contains(list.output, "unknown distribution 'zipf'")) << list.output;
  EXPECT_TRUE(contains(list.output, "not a finite number")) << list.output;
  EXPECT_TRUE(contains(list.output, "min_bytes")) << list.output;

  CliRun json = run_cli({"list", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  size_t broken = 0, whole = 0;
  for (const auto& w : nlohmann::json::parse(json.output)) (w.value("broken", false) ? broken : whole)++;
  EXPECT_EQ(broken, 6u);
  EXPECT_EQ(whole, 1u);

  // The healthy workload still works; the broken one is refused with its reason, as a usage error.
  EXPECT_EQ(run_cli({"show", "12p", "--size", "test"}).exit_code, 0);
  CliRun show = run_cli({"show", "91x"});
  EXPECT_EQ(show.exit_code, 2) << show.output;
  EXPECT_TRUE(contains(show.output, "broken")) << show.output;
  // The lint counts a spec that does not load as a failure.
  CliRun lint = run_cli({"lint", "--workloads", "9*"});
  EXPECT_EQ(lint.exit_code, 1) << lint.output;
  fs::remove_all(suite);
}

// ---------------------------------------------------------------- a run records every attempt

TEST(Robustness, ARunRecordsBrokenSpecsAndHarnessErrorsAsEntriesAndExits3) {
  const fs::path suite = suite_with_broken_specs("broken-run");
  variant(suite, "96x_BaselineDoesNotBuild", [](std::string t) { return t; });
  write(suite / "96x_BaselineDoesNotBuild" / "baseline.cpp", "this is not C++\n");
  variant(suite, "97x_BaselineDies", [](std::string t) { return t; });
  write(suite / "97x_BaselineDies" / "baseline.cpp",
        "#include <opbench/kernel.h>\nOB_DEFINE_ABI_VERSION()\nextern \"C\" int32_t ob_run(const ob_call*) { __builtin_trap(); }\n");
  ScopedEnv env("OPBENCH_WORKLOADS", suite.string());
  const fs::path out = scratch_dir("broken-run-out");
  CliRun run = run_cli({"run", "--impl", "baseline", "--size", "test", "--no-timing", "--trials", "1", "--out", out.string()});
  EXPECT_EQ(run.exit_code, 3) << run.output;
  nlohmann::json all = read_json(out / "results.json");
  EXPECT_EQ(all["complete"], true);
  ASSERT_EQ(all["results"].size(), 9u) << all.dump(1);
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& r : all["results"]) by_id[r["workload"]] = r;
  EXPECT_EQ(by_id["12p_RMSNorm"]["status"], "correct");
  for (const char* id : {"90x_Syntax", "91x_NanTolerance", "92x_UnknownDist", "93x_DivideByZero", "94x_InfiniteSize", "95x_NegativeWork"}) {
    EXPECT_EQ(by_id[id]["status"], "harness_error") << id;
    EXPECT_TRUE(contains(by_id[id]["message"], "spec does not load")) << by_id[id];
  }
  EXPECT_EQ(by_id["96x_BaselineDoesNotBuild"]["status"], "harness_error");
  EXPECT_TRUE(contains(by_id["96x_BaselineDoesNotBuild"]["message"], "does not build")) << by_id["96x_BaselineDoesNotBuild"];
  // The baseline's worker died: the workload is in the results, saying so.
  EXPECT_EQ(by_id["97x_BaselineDies"]["status"], "harness_error");
  EXPECT_TRUE(contains(by_id["97x_BaselineDies"]["message"], "baseline")) << by_id["97x_BaselineDies"];
  EXPECT_TRUE(fs::exists(out / "97x_BaselineDies.baseline.json"));
  EXPECT_TRUE(temporaries(out).empty());
  fs::remove_all(suite);
  fs::remove_all(out);
}

TEST(Robustness, AKilledRunKeepsEveryEvaluationItFinished) {
  const fs::path suite = scratch_dir("killed-run");
  fs::copy(source_dir() / "workloads" / "12p_RMSNorm", suite / "12p_RMSNorm", fs::copy_options::recursive);
  variant(suite, "98x_BaselineHangs", [](std::string t) { return t; });
  write(suite / "98x_BaselineHangs" / "baseline.cpp",
        "#include <opbench/kernel.h>\nOB_DEFINE_ABI_VERSION()\n"
        "extern \"C\" int32_t ob_run(const ob_call*) { for (volatile long i = 0;; i = i + 1) {} }\n");
  ScopedEnv env("OPBENCH_WORKLOADS", suite.string());
  const fs::path out = scratch_dir("killed-run-out");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    execl(OPBENCH_BINARY, OPBENCH_BINARY, "run", "--impl", "baseline", "--size", "test", "--no-timing", "--trials", "1", "--timeout",
          "600", "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  // Wait until the first evaluation is on disk (the second then hangs), then kill the run outright.
  size_t finished = 0;
  for (int i = 0; i < 600 && finished == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::error_code ec;
    if (fs::exists(out / "results.json", ec)) finished = read_json(out / "results.json")["results"].size();
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(finished, 1u) << "the first evaluation never reached results.json";
  nlohmann::json all = read_json(out / "results.json");
  EXPECT_EQ(all["complete"], false);
  EXPECT_EQ(all["planned"], 2);
  ASSERT_EQ(all["results"].size(), 1u);
  EXPECT_EQ(all["results"][0]["workload"], "12p_RMSNorm");
  EXPECT_EQ(all["results"][0]["status"], "correct");
  EXPECT_TRUE(temporaries(out).empty());
  fs::remove_all(suite);
  fs::remove_all(out);
}

// ---------------------------------------------------------------- UTF-8 in everything written

TEST(Robustness, InvalidUtf8FromKernelsCompilersAndFileNamesStaysValidJson) {
  const fs::path dir = scratch_dir("utf8");
  // A file name that is not UTF-8, a kernel that prints bytes that are not, and gets the answer wrong.
  const fs::path printing = dir / "prints\xff\xfe.cpp";
  write(printing,
        "#include <opbench/kernel.h>\n#include <cstdio>\n#include <cstring>\nOB_DEFINE_ABI_VERSION()\n"
        "extern \"C\" int32_t ob_run(const ob_call* call) {\n"
        "  std::fputs(\"caf\\xc3 \\xff\\xfe \\xe2\\x82 cut\\n\", stdout); std::fflush(stdout);\n"
        "  std::memset(call->outputs[0].data, 0, ob_numel(&call->outputs[0]) * 4); return 0; }\n");
  CliRun run = run_cli({"eval", "12p", printing.string(), "--size", "test", "--no-timing", "--trials", "1", "--json", (dir / "a.json").string()});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const std::string a = read_file(dir / "a.json");
  EXPECT_TRUE(utf8_valid(a));
  nlohmann::json ja = nlohmann::json::parse(a);  // throws on invalid UTF-8
  EXPECT_EQ(ja["status"], "incorrect");
  EXPECT_TRUE(contains(ja["kernel_output"], "cut")) << ja["kernel_output"];

  // A compiler log quoting bytes that are not UTF-8.
  const fs::path broken = dir / "broken.cpp";
  write(broken, "#error caf\xc3 \xff here\n");
  run = run_cli({"eval", "12p", broken.string(), "--size", "test", "--no-timing", "--json", (dir / "b.json").string()});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const std::string b = read_file(dir / "b.json");
  EXPECT_TRUE(utf8_valid(b));
  EXPECT_EQ(nlohmann::json::parse(b)["status"], "compile_error");
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- full disks and read-only folders

// A tmpfs of `size` mounted at `dir` for the life of the object; skipped() when mounting is not
// permitted (not root, or no CAP_SYS_ADMIN in a container).
class TinyFilesystem {
 public:
  TinyFilesystem(const fs::path& dir, bool read_only) : dir_(dir) {
    fs::create_directories(dir);
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", read_only ? MS_RDONLY : 0, "size=64k") == 0;
    if (!mounted_) reason_ = std::string("cannot mount a tmpfs: ") + std::strerror(errno);
  }
  ~TinyFilesystem() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool mounted() const { return mounted_; }
  const std::string& reason() const { return reason_; }

 private:
  fs::path dir_;
  bool mounted_ = false;
  std::string reason_;
};

TEST(Robustness, AFullDiskIsAnErrorAndLeavesNothingHalfWritten) {
  const fs::path base = scratch_dir("full");
  TinyFilesystem tiny(base / "disk", false);
  if (!tiny.mounted()) GTEST_SKIP() << tiny.reason();
  const fs::path disk = base / "disk";
  // Fill it to the last byte.
  {
    std::ofstream filler(disk / "filler", std::ios::binary);
    const std::string block(1024, 'x');
    for (int i = 0; i < 1024 && filler; ++i) filler.write(block.data(), std::streamsize(block.size())).flush();
  }
  CliRun eval = run_cli({"eval", "12p", "--impl", "baseline", "--size", "test", "--no-timing", "--trials", "1", "--json", (disk / "r.json").string()});
  EXPECT_EQ(eval.exit_code, 3) << eval.output;
  EXPECT_TRUE(contains(eval.output, "r.json")) << eval.output;
  EXPECT_FALSE(fs::exists(disk / "r.json"));

  CliRun dump = run_cli({"dump", "12p", "--size", "test", "--out", (disk / "dump").string()});
  EXPECT_EQ(dump.exit_code, 3) << dump.output;
  EXPECT_FALSE(fs::exists(disk / "dump" / "manifest.json"));
  EXPECT_FALSE(fs::exists(disk / "dump" / "x.npy")) << "a truncated array was left behind";

  CliRun run = run_cli({"run", "--workloads", "12p", "--impl", "baseline", "--size", "test", "--no-timing", "--trials", "1", "--out",
                        (disk / "run").string()});
  EXPECT_EQ(run.exit_code, 3) << run.output;
  if (fs::exists(disk / "run" / "results.json")) {
    EXPECT_NO_THROW(read_json(disk / "run" / "results.json"));
  }

  CliRun lint = run_cli({"lint", "--workloads", "12p", "--json", (disk / "lint.json").string()});
  EXPECT_EQ(lint.exit_code, 3) << lint.output;
  EXPECT_TRUE(temporaries(disk).empty());
}

TEST(Robustness, AReadOnlyOutputIsAnErrorNotASilentLoss) {
  const fs::path base = scratch_dir("readonly");
  TinyFilesystem ro(base / "ro", true);
  if (!ro.mounted()) GTEST_SKIP() << ro.reason();
  CliRun eval = run_cli({"eval", "12p", "--impl", "baseline", "--size", "test", "--no-timing", "--trials", "1", "--json",
                         (base / "ro" / "r.json").string()});
  EXPECT_EQ(eval.exit_code, 3) << eval.output;
  EXPECT_TRUE(contains(eval.output, "Read-only")) << eval.output;
  CliRun run = run_cli({"run", "--workloads", "12p", "--impl", "baseline", "--size", "test", "--out", (base / "ro" / "run").string()});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "--out")) << run.output;
}

// ---------------------------------------------------------------- the kernel cache

TEST(Robustness, ATruncatedCacheEntryIsRebuiltAndStaleTemporariesAreRemoved) {
  const fs::path cache = scratch_dir("cache");
  ScopedEnv env("OPBENCH_CACHE", cache.string());
  const std::vector<std::string> eval = {"eval", "12p", "--impl", "baseline", "--size", "test", "--no-timing", "--trials", "1"};
  ASSERT_EQ(run_cli(eval).exit_code, 0);
  std::vector<fs::path> objects;
  for (const auto& e : fs::directory_iterator(cache / "kernels"))
    if (e.path().extension() == ".so") objects.push_back(e.path());
  ASSERT_FALSE(objects.empty());
  for (const auto& so : objects) fs::resize_file(so, fs::file_size(so) / 2);
  // What killed builds and writes leave: a build of a process that is gone, an old atomic-write temporary.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  write(cache / "kernels" / fmt::format(".baseline-0123.so.{}.build", gone), "half an object");
  const fs::path old_tmp = cache / "kernels" / ".baseline-0123.log.deadbeef.tmp";
  write(old_tmp, "half a log");
  fs::last_write_time(old_tmp, fs::file_time_type::clock::now() - std::chrono::hours(2));

  CliRun again = run_cli(eval);
  EXPECT_EQ(again.exit_code, 0) << "a truncated cache entry must be rebuilt, not make a correct kernel fail\n" << again.output;
  for (const auto& so : objects) {
    const nlohmann::json record = read_json(fs::path(so.string() + ".record"));
    EXPECT_EQ(record["size"].get<uint64_t>(), fs::file_size(so));
  }
  EXPECT_TRUE(temporaries(cache).empty());
  fs::remove_all(cache);
}

// ---------------------------------------------------------------- threads and the worker's limits

TEST(Robustness, TheWorkerRunsVendorLibrariesAtManyThreads) {
  // The CLI refuses more threads than CPUs; the worker's address-space limit must still hold a
  // vendor library at any count a machine can have, so the library is driven directly here.
  ScopedEnv worker("OPBENCH_WORKER", (fs::path(OPBENCH_BINARY).parent_path() / "opbench-worker").string());
  ScopedEnv roots("OPBENCH_WORKLOADS", (source_dir() / "workloads").string());
  Registry registry(Registry::default_root());
  const WorkloadSpec& gemm = registry.find("8p");
  auto target = make_target("cpu");
  for (int threads : {64, 256}) {
    EvalOptions options;
    options.size = "test";
    options.threads = threads;
    options.trials = 1;
    options.time = false;
    options.timing.call_timeout_s = 10;  // a regression hangs a batch of calls: fail in minutes, not hours
    Result r = evaluate(gemm, builtin_implementation(gemm, "baseline"), *target, options);
    EXPECT_EQ(r.status, Status::correct) << threads << " threads: " << r.message << "\n" << r.kernel_output;
  }
}

}  // namespace
}  // namespace opbench::testing
