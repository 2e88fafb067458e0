#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>

#include "calibrate/machine_profile.h"
#include "core/json_io.h"
#include "core/machine.h"
#include "report_fixtures.h"

namespace opbench {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("opbench-profile-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A profile that claims to be of this machine (CPU model and usable cores as probed).
MachineProfile this_machine(int threads, bool quick, const std::string& created) {
  MachineProfile p = testing::made_profile();
  p.cpu_model = machine_info().cpu_model;
  p.usable_cores = machine_info().logical_cpus;
  p.threads = threads;
  p.quick = quick;
  p.created = created;
  p.per_threads.clear();
  for (int t : calibration_thread_counts(threads, quick)) p.per_threads.push_back({t, 100.0 * t, {10, 9, 8}});
  p.id = profile_fingerprint(p.target, p.cpu_model, p.usable_cores, p.isa_level, threads) + (quick ? "-q" : "");
  return p;
}

TEST(MachineProfile, JsonRoundTripIsLossless) {
  MachineProfile p = testing::made_profile();
  p.caches = {{1, 48 << 10, 24 << 10, 250.5}};
  p.per_threads.back().cpu_share = 0.5;
  const nlohmann::json j = to_json(p);
  EXPECT_EQ(j.at("schema"), kMachineProfileSchema);
  EXPECT_EQ(j.at("schema_version"), schema_version());
  MachineProfile back = profile_from_json(j);
  EXPECT_EQ(to_json(back).dump(), j.dump());
  EXPECT_DOUBLE_EQ(back.peak_gflops(2), 200);
  EXPECT_DOUBLE_EQ(back.per_threads.back().cpu_share, 0.5);
  EXPECT_DOUBLE_EQ(back.per_threads.front().cpu_share, -1) << "not recorded stays not recorded";
}

TEST(MachineProfile, RefusesAnotherDocumentAndAnUnknownMajorVersion) {
  nlohmann::json j = to_json(testing::made_profile());
  j["schema"] = "opbench.result";
  EXPECT_THROW(profile_from_json(j), SchemaError);
  j = to_json(testing::made_profile());
  j["schema_version"] = std::to_string(kSchemaMajor + 1) + ".0";
  EXPECT_THROW(profile_from_json(j), SchemaError);
  j = to_json(testing::made_profile());
  j["per_threads"] = nlohmann::json::array();
  EXPECT_THROW(profile_from_json(j), std::invalid_argument);
}

TEST(MachineProfile, FingerprintDependsOnEveryKeyPart) {
  const std::string base = profile_fingerprint("cpu", "X", 2, "x86-64-v3", 2);
  EXPECT_EQ(base, profile_fingerprint("cpu", "X", 2, "x86-64-v3", 2));
  EXPECT_NE(base, profile_fingerprint("cpu", "Y", 2, "x86-64-v3", 2));
  EXPECT_NE(base, profile_fingerprint("cpu", "X", 4, "x86-64-v3", 2));
  EXPECT_NE(base, profile_fingerprint("cpu", "X", 2, "x86-64-v4", 2));
  EXPECT_NE(base, profile_fingerprint("cpu", "X", 2, "x86-64-v3", 1));
  EXPECT_EQ(base.find('/'), std::string::npos);
}

TEST(MachineProfile, ThreadCounts) {
  EXPECT_EQ(calibration_thread_counts(2, false), (std::vector<int>{1, 2}));
  EXPECT_EQ(calibration_thread_counts(1, true), (std::vector<int>{1}));
  EXPECT_EQ(calibration_thread_counts(12, false), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 12}));
  EXPECT_EQ(calibration_thread_counts(64, true), (std::vector<int>{1, 64}));
}

TEST(MachineProfile, FindPrefersFullCalibrationsAndSkipsForeignFiles) {
  const fs::path dir = fresh_dir("find");
  save_profile(dir, this_machine(2, true, "2026-12-01T10:00:00Z"));
  save_profile(dir, this_machine(2, false, "2026-12-01T09:00:00Z"));
  MachineProfile other = this_machine(2, false, "2026-12-01T11:00:00Z");
  other.cpu_model = "Another CPU";
  other.id = "other";
  save_profile(dir, other);
  std::ofstream(dir / "broken.json") << "{ not json";
  std::ofstream(dir / "newer.json") << R"({"schema":"opbench.machine_profile","schema_version":"99.0"})";
  auto found = find_profile(dir, "cpu", "x86-64-v3", 2);
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->quick);
  EXPECT_EQ(found->cpu_model, machine_info().cpu_model);
  // Another ISA level or a thread count not measured: nothing.
  EXPECT_FALSE(find_profile(dir, "cpu", "x86-64-v4", 2));
  EXPECT_FALSE(find_profile(dir, "cpu", "x86-64-v3", 3));
  fs::remove_all(dir);
}

// A quick profile from before the figures rested on CPU clocks (no cpu_share) may have been measured
// beside other work on wall clocks alone (one such read half the FMA peak and flagged honest
// baselines below the floor): it is not used, so the first run measures again; one with it is.
TEST(MachineProfile, AQuickProfileTimedOnWallClocksOnlyIsMeasuredAgain) {
  const fs::path dir = fresh_dir("stale-quick");
  MachineProfile p = this_machine(2, true, "2026-12-01T10:00:00Z");
  save_profile(dir, p);
  EXPECT_FALSE(find_profile(dir, "cpu", "x86-64-v3", 2));
  for (auto& row : p.per_threads) row.cpu_share = 0.97;
  save_profile(dir, p);  // the same id: replaces the file
  auto found = find_profile(dir, "cpu", "x86-64-v3", 2);
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->quick);
  fs::remove_all(dir);
}

TEST(MachineProfile, LoadByIdStaysInsideTheFolder) {
  const fs::path dir = fresh_dir("byid");
  MachineProfile p = this_machine(2, false, "2026-12-01T09:00:00Z");
  save_profile(dir, p);
  EXPECT_TRUE(load_profile_by_id(dir, p.id));
  EXPECT_FALSE(load_profile_by_id(dir, "../" + dir.filename().string() + "/" + p.id));
  EXPECT_FALSE(load_profile_by_id(dir, ""));
  EXPECT_FALSE(load_profile_by_id(dir, "missing"));
  fs::remove_all(dir);
}

TEST(MachineProfile, EnsureUsesTheStoredProfileWithoutMeasuring) {
  const fs::path dir = fresh_dir("ensure");
  MachineProfile p = this_machine(1, false, "2026-12-01T09:00:00Z");
  p.per_threads[0].fma_gflops = 12345;  // a value no measurement would give
  save_profile(dir, p);
  ::setenv("OPBENCH_PROFILE_DIR", dir.c_str(), 1);
  int lines = 0;
  MachineProfile got = ensure_profile("cpu", "x86-64-v3", 1, [&](const std::string&) { ++lines; });
  ::unsetenv("OPBENCH_PROFILE_DIR");
  EXPECT_EQ(lines, 0);
  EXPECT_DOUBLE_EQ(got.peak_gflops(1), 12345);
  fs::remove_all(dir);
}

TEST(MachineProfile, QuickCalibrationMeasuresSomethingPlausibleAndIsStored) {
  if (!isa_level_supported("x86-64-v3")) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  const fs::path dir = fresh_dir("quick");
  ::setenv("OPBENCH_PROFILE_DIR", dir.c_str(), 1);
  MachineProfile p = ensure_profile("cpu", "x86-64-v3", 1);
  ::unsetenv("OPBENCH_PROFILE_DIR");
  EXPECT_TRUE(p.quick);
  ASSERT_EQ(p.per_threads.size(), 1u);
  // Any x86-64-v3 core does at least 8 lanes x 2 FLOP per ns and streams at least 1 GB/s, even under load.
  EXPECT_GT(p.per_threads[0].fma_gflops, 2);
  EXPECT_LT(p.per_threads[0].fma_gflops, 1000);
  EXPECT_GT(p.per_threads[0].dram.read, 0.5);
  EXPECT_GT(p.per_threads[0].dram.copy, 0.5);
  EXPECT_GT(p.per_threads[0].dram.triad, 0.5);
  EXPECT_LT(p.seconds, 20);
  EXPECT_TRUE(fs::exists(profile_path(dir, p)));
  fs::remove_all(dir);
}

// A calibration beside other work: the measuring thread shares its one CPU with a spinning thread
// (one CPU, so they take turns rather than share a core's units as hyperthreads would). The figures
// rest on the threads' CPU clocks, so they do not read low, and the profile records the share.
TEST(MachineProfile, CalibrationBesideABusyThreadDoesNotReadLow) {
  if (!isa_level_supported("x86-64-v3")) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // threads started from here inherit it
  PeakOptions o = PeakOptions::quick("x86-64-v3");
  o.array_bytes = size_t(16) << 20;
  o.llc_multiple = 0;  // the memory figure only needs to be compared with itself here
  std::vector<double> quiet_share, busy_share;
  const double quiet_fma = measure_fma_gflops(1, o, &quiet_share);
  const double quiet_read = measure_bandwidth(1, o, &quiet_share).read;
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const double busy_fma = measure_fma_gflops(1, o, &busy_share);
  const double busy_read = measure_bandwidth(1, o, &busy_share).read;
  stop = true;
  spinner.join();
  sched_setaffinity(0, sizeof saved, &saved);
  // The spinner must have taken the CPU during most repetitions for the test to mean anything; not
  // during every one (a scheduler may let a short repetition run a whole slice undisturbed: seen with
  // EEVDF on Linux 6.18, two of the repetitions at 0.99).
  std::string shares;
  int disturbed = 0;
  for (double share : busy_share) {
    disturbed += share < 0.8;
    shares += fmt::format(" {:.2f}", share);
  }
  EXPECT_GE(2 * disturbed, int(busy_share.size())) << "the spinner took little of the CPU; shares:" << shares;
  EXPECT_GT(busy_fma, 0.8 * quiet_fma) << "quiet " << quiet_fma << " GFLOP/s";
  EXPECT_GT(busy_read, 0.7 * quiet_read) << "quiet " << quiet_read << " GB/s";
}

TEST(MachineProfile, UnknownIsaLevelAndTargetAreRefused) {
  EXPECT_THROW(calibrate({"cpu", "x86-64-v9", 1, true}), std::invalid_argument);
  EXPECT_THROW(calibrate({"cuda", "x86-64-v3", 1, true}), std::invalid_argument);
}

}  // namespace
}  // namespace opbench
